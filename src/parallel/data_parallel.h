// Data parallelism for the trainer: the GradReducer (train/grad_reducer.h) that `replica train`
// plugs in when mpirun started it with R > 1 ranks. Rank r reads batch[r::R] (the data loader) and
// sums its micro-batches j ≡ r (mod R) locally; this unit does the rest:
//   SumTokens        exact integer sum of the label counts (tree all-reduce of int64);
//   ReduceGradients  tree all-reduce of the loss sums and tree reduce-scatter of the gradients
//                    (collectives.h), then the global grad norm from the shards;
//   MakeOptimizer    the ZeRO-1 ShardedOptimizer (sharded_optimizer.h, kAllGatherParams) over the
//                    same shards: each rank updates its shard of the parameters with its shard of
//                    Adam m and v, then all-gathers them.
// Rank 0 reports at the end how much wall time went into the collectives, to read strong scaling.
// Everything is bit-identical to the single-process TrainStep for any power-of-two R that divides
// a power-of-two micro-batch count (RequireRankIndependentBatch, checked by the constructor).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>

#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "run/run_config.h"
#include "train/grad_reducer.h"

namespace replica::parallel {

class DataParallel final : public GradReducer {
 public:
  // Error (naming the config keys) when the config's global batch cannot be shared by
  // comm.world() ranks with rank-count-independent results, or asks for the sequential
  // accumulation with more than one rank (that needs parallel.sharding: zero3).
  DataParallel(Communicator& comm, const RunConfig& config);
  // Rank 0 prints where the data-parallel time went (stderr, one line).
  ~DataParallel() override;

  int64_t SumTokens(int64_t local) override;
  // Needs MakeOptimizer first (it fixes the shards).
  double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                         const Backend& backend) override;
  // A ZeRO-1 ShardedOptimizer whose steps count in the report; this DataParallel must outlive it.
  std::unique_ptr<Optimizer> MakeOptimizer(const ParamLayout& layout,
                                           std::unique_ptr<const UpdateRule> rule,
                                           const Backend& backend) override;

 private:
  Communicator& comm_;
  std::optional<ShardPlan> plan_;  // the shards of the optimizer made last
  // Wall seconds inside ReduceGradients (loss all-reduce, reduce-scatter, norm: includes waiting
  // for the slowest rank) and the optimizer's steps (shard update + all-gather), and the steps
  // counted.
  double reduce_s_ = 0, step_s_ = 0;
  int64_t steps_ = 0;
};

}  // namespace replica::parallel
