// The LM head's types (Backend::LmHeadLossForward / LmHeadLossForwardBackward): the ignored
// label, the loss sums an LM head call returns, and the scratch it computes in: logits of a chunk
// of whole rows over the vocabulary plus per-row statistics. The chunk's row count depends only on
// the vocabulary and the scratch budget, never on the thread count.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/buffer.h"

namespace replica {

class Backend;

constexpr int32_t kIgnoreLabel = -100;

struct CrossEntropySums {
  double ce_sum = 0;      // Σ (lse - logit[label]) over rows with label != -100
  double lse_sq_sum = 0;  // Σ lse² over the same rows
  int64_t tokens = 0;     // number of such rows
  // Set by a backend that computes both sums as torch does, in fp32 (bf16-fsdp): ce_sum and
  // lse_sq_sum are then fp32 values, and a mean over `div` tokens is taken as torch takes it
  // (TorchMeanCe, TorchMeanLseSq).
  bool fp32 = false;
};

// The mean CE over `div` tokens: ce_sum / div, for fp32 sums the fp32 quotient (OLMo-core's
// `loss / loss_div_factor`).
double TorchMeanCe(const CrossEntropySums& s, int64_t div);
// The mean lse² over `div` tokens: lse_sq_sum / div; for fp32 sums with z_mul > 0 the z-loss as
// OLMo-core records it, fp32((fp32(z_mul) · lse_sq_sum) / div), divided by z_mul in double.
double TorchMeanLseSq(const CrossEntropySums& s, int64_t div, double z_mul);

// Preallocated scratch for up to max_rows rows: logits [chunk_rows, V] plus per-row statistics,
// in memory from the backend whose LM head computes in it (Backend::Allocate).
class LmHeadWorkspace {
 public:
  // Scratch budget for the logits chunk, in floats (32 MiB): 1024 rows at V = 8192, 83 at 100352.
  static constexpr int64_t kScratchFloats = int64_t{8} << 20;
  LmHeadWorkspace() = default;
  LmHeadWorkspace(const Backend& backend, int64_t max_rows, int64_t vocab,
                  int64_t scratch_floats = kScratchFloats);
  // The chunk_rows() of a workspace built with these arguments: scratch_floats / vocab rows,
  // clamped to [1, max_rows].
  static int64_t ChunkRows(int64_t max_rows, int64_t vocab, int64_t scratch_floats = kScratchFloats);
  // The bytes a workspace built with these arguments holds: its logits chunk and per-row
  // statistics, plus, with `backward_scratch`, the two [chunk_rows, D] buffers that scaled_x(D)
  // and e_times_w(D) size on first use. The constructor and those two calls size their buffers
  // through the same element counts.
  static uint64_t Bytes(int64_t max_rows, int64_t vocab, int64_t D, bool backward_scratch,
                        int64_t scratch_floats = kScratchFloats);
  // The bytes this workspace holds now (its buffers' sizes).
  uint64_t allocated_bytes() const;
  int64_t chunk_rows() const { return chunk_rows_; }
  int64_t vocab() const { return vocab_; }
  float* logits() { return logits_.f32(); }
  double* lse() { return lse_.f64(); }
  double* ce() { return ce_.f64(); }
  float* row_max() { return max_.f32(); }
  double* row_sum() { return sum_.f64(); }  // Σ exp(logit - row_max)
  float* row_coef() { return coef_.f32(); }  // backward's per-row label-entry gradient d_y
  // Adds a chunk's rows (their lse() and ce(); labels [rows] are the chunk's) to `sums` in row
  // order, skipping ignored labels.
  void AddChunkSums(const int32_t* labels, int64_t rows, CrossEntropySums& sums) const;
  // Backward scratch of [chunk_rows, D], allocated on first use and kept.
  float* scaled_x(int64_t D);
  float* e_times_w(int64_t D);

 private:
  // Element counts of the buffers: logits [chunk_rows, vocab], each per-row statistic
  // [chunk_rows], each backward buffer [chunk_rows, D].
  static size_t LogitsElems(int64_t chunk_rows, int64_t vocab) {
    return static_cast<size_t>(chunk_rows * vocab);
  }
  static size_t RowElems(int64_t chunk_rows) { return static_cast<size_t>(chunk_rows); }
  static size_t BackwardElems(int64_t chunk_rows, int64_t D) {
    return static_cast<size_t>(chunk_rows * D);
  }

  float* Backward(Buffer& b, int64_t D);

  const Backend* backend_ = nullptr;
  int64_t chunk_rows_ = 0, vocab_ = 0;
  Buffer logits_;                  // f32
  Buffer lse_, ce_, sum_;          // f64
  Buffer max_, coef_, scaled_x_, e_times_w_;  // f32
};

}  // namespace replica
