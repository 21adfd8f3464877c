#include "ops/lm_head_workspace.h"

#include <algorithm>

#include "core/error.h"

namespace replica {

int64_t LmHeadWorkspace::ChunkRows(int64_t max_rows, int64_t vocab, int64_t scratch_floats) {
  return std::clamp<int64_t>(scratch_floats / vocab, 1, max_rows);
}

LmHeadWorkspace::LmHeadWorkspace(int64_t max_rows, int64_t vocab, int64_t scratch_floats)
    : vocab_(vocab) {
  Require(vocab > 0 && max_rows > 0, "LM head workspace: bad shape rows={} vocab={}", max_rows,
          vocab);
  chunk_rows_ = ChunkRows(max_rows, vocab, scratch_floats);
  logits_.resize(LogitsElems(chunk_rows_, vocab));
  lse_.resize(RowElems(chunk_rows_));
  ce_.resize(RowElems(chunk_rows_));
  sum_.resize(RowElems(chunk_rows_));
  max_.resize(RowElems(chunk_rows_));
  coef_.resize(RowElems(chunk_rows_));
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
  return sizeof(float) * (logits_.capacity() + max_.capacity() + coef_.capacity() +
                          scaled_x_.capacity() + e_times_w_.capacity()) +
         sizeof(double) * (lse_.capacity() + ce_.capacity() + sum_.capacity());
}

float* LmHeadWorkspace::scaled_x(int64_t D) {
  const size_t n = BackwardElems(chunk_rows_, D);
  if (scaled_x_.size() < n) scaled_x_.resize(n);  // once: the first backward
  return scaled_x_.data();
}

float* LmHeadWorkspace::e_times_w(int64_t D) {
  const size_t n = BackwardElems(chunk_rows_, D);
  if (e_times_w_.size() < n) e_times_w_.resize(n);
  return e_times_w_.data();
}

void LmHeadWorkspace::AddChunkSums(const int32_t* labels, int64_t rows,
                                   CrossEntropySums& sums) const {
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[i] == kIgnoreLabel) continue;
    sums.ce_sum += ce_[static_cast<size_t>(i)];
    sums.lse_sq_sum += lse_[static_cast<size_t>(i)] * lse_[static_cast<size_t>(i)];
    sums.tokens += 1;
  }
}

}  // namespace replica
