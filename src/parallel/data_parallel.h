// Data parallelism for the trainer: the RankReducer (train/train_step.h) that `replica
// train` plugs in when mpirun started it with R > 1 ranks. Rank r reads batch[r::R] (the data
// loader) and sums its micro-batches j ≡ r (mod R) locally; this unit does the rest:
//   SumTokens        exact integer sum of the label counts (tree all-reduce of int64);
//   ReduceGradients  tree reduce-scatter of the gradients and tree all-reduce of the loss sums
//                    (collectives.h), then the global grad norm from the shards;
//   OptimizerStep    ZeRO-1 AdamW on this rank's shard + all-gather of the parameters (zero1.h);
//   Adopt/GatherOptimizer  move Adam m, v, t between the trainer's full-size AdamW (what checkpoints
//                    read and write, on rank 0) and the per-rank shards.
// Rank 0 reports at the end how much wall time went into the collectives, to read strong scaling.
// Everything is bit-identical to the single-process TrainStep for any power-of-two R that divides
// a power-of-two micro-batch count (RequireRankIndependentBatch, checked by the constructor).
#pragma once
#include <cstdint>
#include <memory>

#include "parallel/communicator.h"
#include "parallel/zero1.h"
#include "run/run_config.h"
#include "train/train_step.h"

namespace replica::parallel {

class DataParallel final : public RankReducer {
 public:
  // Error (naming the config keys) when the config's global batch cannot be shared by
  // comm.world() ranks with rank-count-independent results.
  DataParallel(Communicator& comm, const RunConfig& config);
  // Rank 0 prints where the data-parallel time went (stderr, one line).
  ~DataParallel() override;

  int64_t SumTokens(int64_t local) override;
  double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars) override;
  void OptimizerStep(FlatBuffer& params, const FlatBuffer& grads, double lr,
                     double grad_coef) override;
  void AdoptOptimizer(const ParamLayout& layout, AdamW& adam) override;
  void GatherOptimizer(AdamW& adam) override;

 private:
  Zero1AdamW& zero();
  Communicator& comm_;
  std::unique_ptr<Zero1AdamW> zero_;
  // Wall seconds inside ReduceGradients (reduce-scatter, loss all-reduce, norm: includes waiting
  // for the slowest rank) and OptimizerStep (shard update + all-gather), and the steps counted.
  double reduce_s_ = 0, step_s_ = 0;
  int64_t steps_ = 0;
};

}  // namespace replica::parallel
