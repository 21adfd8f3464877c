#include "ops/lm_head_workspace.h"

#include <algorithm>

#include "core/error.h"
#include "ops/backend.h"

namespace replica {

int64_t LmHeadWorkspace::ChunkRows(int64_t max_rows, int64_t vocab, int64_t scratch_floats) {
  return std::clamp<int64_t>(scratch_floats / vocab, 1, max_rows);
}

LmHeadWorkspace::LmHeadWorkspace(const Backend& backend, int64_t max_rows, int64_t vocab,
                                 int64_t scratch_floats)
    : backend_(&backend), vocab_(vocab) {
  Require(vocab > 0 && max_rows > 0, "LM head workspace: bad shape rows={} vocab={}", max_rows,
          vocab);
  chunk_rows_ = ChunkRows(max_rows, vocab, scratch_floats);
  logits_ = backend.Allocate(DType::kF32, LogitsElems(chunk_rows_, vocab));
  lse_ = backend.Allocate(DType::kF64, RowElems(chunk_rows_));
  ce_ = backend.Allocate(DType::kF64, RowElems(chunk_rows_));
  sum_ = backend.Allocate(DType::kF64, RowElems(chunk_rows_));
  max_ = backend.Allocate(DType::kF32, RowElems(chunk_rows_));
  coef_ = backend.Allocate(DType::kF32, RowElems(chunk_rows_));
}

uint64_t LmHeadWorkspace::Bytes(int64_t max_rows, int64_t vocab, int64_t D, bool backward_scratch,
                                int64_t scratch_floats) {
  const int64_t c = ChunkRows(max_rows, vocab, scratch_floats);
  // logits, max and coef are float; lse, ce and sum double.
  uint64_t bytes = sizeof(float) * (LogitsElems(c, vocab) + 2 * RowElems(c)) +
                   sizeof(double) * 3 * RowElems(c);
  if (backward_scratch) bytes += sizeof(float) * 2 * BackwardElems(c, D);
  return bytes;
}

uint64_t LmHeadWorkspace::allocated_bytes() const {
  return logits_.bytes() + lse_.bytes() + ce_.bytes() + sum_.bytes() + max_.bytes() +
         coef_.bytes() + scaled_x_.bytes() + e_times_w_.bytes();
}

float* LmHeadWorkspace::Backward(Buffer& b, int64_t D) {
  const size_t n = BackwardElems(chunk_rows_, D);
  if (b.size() < n) b = backend_->Allocate(DType::kF32, n);  // once: the first backward
  return b.f32();
}

float* LmHeadWorkspace::scaled_x(int64_t D) { return Backward(scaled_x_, D); }

float* LmHeadWorkspace::e_times_w(int64_t D) { return Backward(e_times_w_, D); }

void LmHeadWorkspace::AddChunkSums(const int32_t* labels, int64_t rows,
                                   CrossEntropySums& sums) const {
  const double* ce = ce_.f64();
  const double* lse = lse_.f64();
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[i] == kIgnoreLabel) continue;
    sums.ce_sum += ce[i];
    sums.lse_sq_sum += lse[i] * lse[i];
    sums.tokens += 1;
  }
}

double TorchMeanCe(const CrossEntropySums& s, int64_t div) {
  if (!s.fp32) return s.ce_sum / static_cast<double>(div);
  return static_cast<float>(s.ce_sum) / static_cast<float>(div);
}

double TorchMeanLseSq(const CrossEntropySums& s, int64_t div, double z_mul) {
  if (!s.fp32 || !(z_mul > 0)) return s.lse_sq_sum / static_cast<double>(div);
  const float z = static_cast<float>(z_mul) * static_cast<float>(s.lse_sq_sum);
  return static_cast<double>(z / static_cast<float>(div)) / z_mul;
}

}  // namespace replica
