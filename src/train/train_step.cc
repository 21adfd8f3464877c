#include "train/train_step.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/profile.h"
#include "train/micro_batch_documents.h"
#include "train/non_finite_guard.h"

namespace replica {

TrainStep::TrainStep(Olmo3Model& model, GradReducer& reducer, Optimizer& optimizer,
                     SkipStepRule& skip, int64_t micro_batch_instances, double z_loss_multiplier,
                     bool contiguous)
    : model_(model),
      reducer_(reducer),
      optimizer_(optimizer),
      skip_(skip),
      mu_(micro_batch_instances),
      zmul_(z_loss_multiplier),
      contiguous_(contiguous),
      acc_(reducer.MakeAccumulation(model)) {
  Require(mu_ >= 1, "train step: micro-batch size must be >= 1, got {}", mu_);
}

StepOutcome TrainStep::Run(const int32_t* ids, const int32_t* labels, int64_t rows, int64_t T,
                           double lr, const int32_t* cu_doc_lens, int64_t num_cu_doc_lens) {
  Require(rows >= mu_ && rows % mu_ == 0,
          "train step: {} rows are not a whole number of micro-batches of {}", rows, mu_);
  const int64_t m = rows / mu_;
  StepOutcome out;
  out.lr = lr;

  int64_t local_n = 0;
  for (int64_t i = 0; i < rows * T; ++i) local_n += labels[i] != kIgnoreLabel;
  out.label_tokens = reducer_.SumTokens(local_n);
  Require(out.label_tokens > 0, "train step: the global batch has no labelled tokens");
  const double grad_scale = 1.0 / static_cast<double>(out.label_tokens);

  ids_.resize(static_cast<size_t>(mu_ * T));
  labels_.resize(ids_.size());
  const size_t row_bytes = static_cast<size_t>(T) * sizeof(int32_t);
  const bool packed = cu_doc_lens != nullptr || num_cu_doc_lens != 0;
  rows_of_.resize(static_cast<size_t>(mu_));
  bool fp32_sums = false;
  for (int64_t k : acc_->Begin(m)) {
    for (int64_t i = 0; i < mu_; ++i) {
      const int64_t r = contiguous_ ? k * mu_ + i : k + m * i;  // MicroBatchPositions(k, m, mu)
      rows_of_[static_cast<size_t>(i)] = r;
      std::memcpy(ids_.data() + i * T, ids + r * T, row_bytes);
      std::memcpy(labels_.data() + i * T, labels + r * T, row_bytes);
    }
    if (packed) {
      GatherDocumentLengths(cu_doc_lens, num_cu_doc_lens, rows, T, rows_of_.data(), mu_, docs_);
    }
    const CrossEntropySums ls = model_.ForwardBackward(
        ids_.data(), labels_.data(), mu_, T, grad_scale, zmul_, packed ? docs_.data() : nullptr,
        packed ? static_cast<int64_t>(docs_.size()) : 0);
    fp32_sums = ls.fp32;
    if (ls.fp32) {
      // OLMo-core's record: each micro-batch's fp32 CE and z-loss divided by the batch's token
      // count; their sum is rounded to fp32 below.
      const float z = static_cast<float>(zmul_) * static_cast<float>(ls.lse_sq_sum);
      acc_->Add(k, {TorchMeanCe(ls, out.label_tokens),
                    z / static_cast<float>(out.label_tokens)});
    } else {
      acc_->Add(k, {ls.ce_sum, ls.lse_sq_sum});
    }
  }
  FlatBuffer& grads = acc_->grads();
  GradAccumulation::Scalars sums = acc_->scalars();
  out.grad_norm = reducer_.ReduceGradients(grads, sums, model_.backend());

  const double n = static_cast<double>(out.label_tokens);
  // With fp32 sums (bf16-fsdp) the scalars are already quotients; OLMo-core adds them in fp32
  // (equal to this single rounding for two micro-batches on one rank).
  out.ce_loss = fp32_sums ? static_cast<float>(sums[0]) : sums[0] / n;
  out.z_loss = fp32_sums ? static_cast<float>(sums[1]) : zmul_ * sums[1] / n;
  out.loss = out.ce_loss + out.z_loss;
  out.clip_coef = ClipCoefficient(out.grad_norm, optimizer_.max_grad_norm());
  // A NaN/Inf step is never applied and stays out of the skip rule's history (non_finite_guard.h).
  out.non_finite = !IsFiniteStep(out.loss, out.grad_norm);
  out.skipped = out.non_finite || !skip_.Observe(out.ce_loss, out.grad_norm);
  if (!out.skipped) optimizer_.Step(acc_->params(), grads, lr, out.clip_coef);
  return out;
}

}  // namespace replica
