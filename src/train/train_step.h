// One optimizer step of the Olmo 3 recipe (DESIGN.md §3, fixture README "Training run"), shared by
// the trainer and the fixture-trajectory tests so both run the same code:
//   1. N = labels != -100 over the whole global batch (summed over ranks), before any backward;
//   2. for each micro-batch, in MicroBatchOrder: zero grads, forward+backward with
//      grad_scale = 1/N and the z-loss multiplier, fold into the fixed reduction tree
//      (grad_accum.h); the rank reducer, if any, combines the ranks' partial sums;
//   3. ce = Σce/N, z = zmul·Σlse²/N, loss = ce + z; ‖g‖ (fixed order), clip coefficient;
//   4. skip rule on (ce, ‖g‖); unless skipped, AdamW with the given LR and clip coefficient.
// Micro-batch k of a rank batch of M·μ rows holds rows k, k+M, k+2M, ... (grad_accum.h).
#pragma once
#include <cstdint>
#include <vector>

#include "model/olmo3.h"
#include "train/grad_accum.h"
#include "train/optimizer.h"
#include "train/skip_step.h"

namespace replica {

// What data parallelism plugs in (src/dist); a single process uses none. Rank r of R holds the
// micro-batches j ≡ r (mod R) of every global batch (grad_accum.h).
class RankReducer {
 public:
  virtual ~RankReducer() = default;
  // Σ over ranks of a per-rank count (exact).
  virtual int64_t SumTokens(int64_t local) = 0;
  // Replaces this rank's partial gradient sum and scalars by the sum over ranks, combined with the
  // top levels of the micro-batch tree (grad_accum.h), identical on every rank.
  virtual void ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars) = 0;
};

struct StepOutcome {
  double loss = 0, ce_loss = 0, z_loss = 0;
  double grad_norm = 0, clip_coef = 1, lr = 0;
  bool skipped = false;
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
};

}  // namespace replica
