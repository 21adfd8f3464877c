// One optimizer step of the Olmo 3 recipe (docs/design.md §3, fixture README "Training run"), shared by
// the trainer and the fixture-trajectory tests so both run the same code:
//   1. N = labels != -100 over the whole global batch (GradReducer::SumTokens over ranks), before
//      any backward;
//   2. for each micro-batch, in the order the reducer's accumulation gives (grad_accumulation.h:
//      the fixed tree of grad_accum.h, or the sequential fold): forward+backward with
//      grad_scale = 1/N and the z-loss multiplier, then the accumulation's Add; the reducer
//      combines the ranks' sums and gives ‖g‖ (fixed order);
//   3. ce = Σce/N, z = zmul·Σlse²/N, loss = ce + z; clip coefficient;
//   4. skip rule on (ce, ‖g‖); unless skipped, Optimizer::Step with the given LR and clip
//      coefficient.
// The same code runs for one process (LocalGradReducer + AdamW), for R data-parallel ranks
// (DataParallel + ZeRO-1) and for ZeRO-3 (parallel/zero3.h), with the same bits as the one
// process with the same accumulation (grad_reducer.h).
// Micro-batch k of a rank batch of M·μ rows holds rows k, k+M, k+2M, ... (grad_accum.h).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/olmo3.h"
#include "optim/optimizer.h"
#include "optim/skip_step.h"
#include "train/grad_accumulation.h"
#include "train/grad_reducer.h"

namespace replica {

struct StepOutcome {
  double loss = 0, ce_loss = 0, z_loss = 0;
  double grad_norm = 0, clip_coef = 1, lr = 0;
  bool skipped = false;       // the update was not applied (skip rule or non-finite)
  bool non_finite = false;    // loss or grad norm was NaN/Inf (non_finite_guard.h)
  int64_t label_tokens = 0;  // N
};

class TrainStep {
 public:
  // `optimizer` updates what `reducer` leaves reduced (as the one reducer.MakeOptimizer makes).
  // Micro-batch k of the m in a rank's batch holds its rows k, k + m, k + 2m, ... (strided: the
  // same micro-batches on any number of ranks, grad_accum.h), or with `contiguous` its rows
  // kμ .. kμ + μ − 1 (OLMo-core's split of a rank's batch).
  TrainStep(Olmo3Model& model, GradReducer& reducer, Optimizer& optimizer, SkipStepRule& skip,
            int64_t micro_batch_instances, double z_loss_multiplier, bool contiguous = false);

  // ids, labels: this rank's batch [rows, T] row-major, rows a multiple of the micro-batch size.
  // cu_doc_lens (optional): OLMo-core's cumulative document lengths over the batch's rows·T
  // positions (packed instances; no document crosses a row). Each micro-batch then runs with its
  // rows' documents (micro_batch_documents.h; Olmo3Model::ForwardBackward).
  StepOutcome Run(const int32_t* ids, const int32_t* labels, int64_t rows, int64_t T, double lr,
                  const int32_t* cu_doc_lens = nullptr, int64_t num_cu_doc_lens = 0);

 private:
  Olmo3Model& model_;
  GradReducer& reducer_;
  Optimizer& optimizer_;
  SkipStepRule& skip_;
  int64_t mu_;
  double zmul_;
  bool contiguous_;
  std::vector<int32_t> ids_, labels_;  // one micro-batch, gathered
  std::vector<int64_t> rows_of_;       // its rows in the batch
  std::vector<int32_t> docs_;          // its cu_doc_lens, when the batch has them
  std::unique_ptr<GradAccumulation> acc_;  // reducer.MakeAccumulation(model)
};

}  // namespace replica
