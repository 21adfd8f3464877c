// One optimizer step of the Olmo 3 recipe (docs/design.md §3, fixture README "Training run"), shared by
// the trainer and the fixture-trajectory tests so both run the same code:
//   1. N = labels != -100 over the whole global batch (summed over ranks), before any backward;
//   2. for each micro-batch, in MicroBatchOrder: zero grads, forward+backward with
//      grad_scale = 1/N and the z-loss multiplier, fold into the fixed reduction tree
//      (grad_accum.h); the rank reducer, if any, combines the ranks' partial sums;
//   3. ce = Σce/N, z = zmul·Σlse²/N, loss = ce + z; ‖g‖ (fixed order), clip coefficient;
//   4. skip rule on (ce, ‖g‖); unless skipped, AdamW with the given LR and clip coefficient
//      (the reducer's ZeRO-1 step when there is one).
// Micro-batch k of a rank batch of M·μ rows holds rows k, k+M, k+2M, ... (grad_accum.h).
#pragma once
#include <cstdint>
#include <vector>

#include "model/olmo3.h"
#include "train/grad_accum.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"

namespace replica {

// What data parallelism plugs in (src/parallel/data_parallel.h); a single process uses none. Rank r of
// R holds the micro-batches j ≡ r (mod R) of every global batch (grad_accum.h). With a reducer the
// gradient norm and the AdamW update are the reducer's (ZeRO-1: each rank updates its shard of the
// parameters with its shard of Adam m and v), with the same bits as the single-process path.
class RankReducer {
 public:
  virtual ~RankReducer() = default;
  // Σ over ranks of a per-rank count (exact).
  virtual int64_t SumTokens(int64_t local) = 0;
  // Combines the ranks' partial sums with the top levels of the micro-batch tree: afterwards
  // `scalars` hold the global sums on every rank and the gradient elements this rank updates hold
  // the global sum (others are unspecified). Returns the global gradient norm (GlobalGradNorm's
  // bits), equal on every rank.
  virtual double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars) = 0;
  // t += 1, AdamW on this rank's elements, then every rank's parameters made identical.
  virtual void OptimizerStep(FlatBuffer& params, const FlatBuffer& grads, double lr,
                             double grad_coef) = 0;
  // Takes this rank's part of `adam`'s m, v and t (after a checkpoint was loaded into it, or zero
  // for a fresh run); `adam`'s full-size m and v may be released.
  virtual void AdoptOptimizer(const ParamLayout& layout, AdamW& adam) = 0;
  // Collective: rank 0's `adam` receives the full m, v and t (to write a checkpoint).
  virtual void GatherOptimizer(AdamW& adam) = 0;
};

struct StepOutcome {
  double loss = 0, ce_loss = 0, z_loss = 0;
  double grad_norm = 0, clip_coef = 1, lr = 0;
  bool skipped = false;       // the update was not applied (skip rule or non-finite)
  bool non_finite = false;    // loss or grad norm was NaN/Inf (non_finite_guard.h)
  int64_t label_tokens = 0;  // N
};

class TrainStep {
 public:
  TrainStep(Olmo3Model& model, AdamW& adam, SkipStepRule& skip, int64_t micro_batch_instances,
            double z_loss_multiplier, RankReducer* reducer = nullptr);

  // ids, labels: this rank's batch [rows, T] row-major, rows a multiple of the micro-batch size.
  StepOutcome Run(const int32_t* ids, const int32_t* labels, int64_t rows, int64_t T, double lr);

 private:
  Olmo3Model& model_;
  AdamW& adam_;
  SkipStepRule& skip_;
  int64_t mu_;
  double zmul_;
  RankReducer* reducer_;
  std::vector<int32_t> ids_, labels_;  // one micro-batch, gathered
  TreeAccumulator acc_;                // its spare buffers live across steps
  std::vector<int64_t> order_;         // MicroBatchOrder(m) for the last m
};

}  // namespace replica
