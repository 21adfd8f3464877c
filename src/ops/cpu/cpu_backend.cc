#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "ops/cpu/adamw.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/attention_decode.h"
#include "ops/cpu/cpu_device.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/embedding.h"
#include "ops/cpu/linear.h"
#include "ops/cpu/matvec.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/rmsnorm.h"
#include "ops/cpu/rope.h"
#include "ops/cpu/swiglu.h"

namespace replica {

const Device& CpuFp32Backend::device() const { return CpuDevice(); }

// ---- Memory and tables ---------------------------------------------------------------------------

void CpuFp32Backend::CopyFromHost(void* dst, const void* src, size_t bytes) const {
  if (bytes) std::memcpy(dst, src, bytes);
}

std::unique_ptr<Backend::StepBracket> CpuFp32Backend::BeginStep() const {
  return std::make_unique<StepBracket>();  // fp32 matmuls read the weights themselves
}

void CpuFp32Backend::NoteWeightsWritten(const void*, size_t) const {}

void CpuFp32Backend::CopyToHost(void* dst, const void* src, size_t bytes) const {
  if (bytes) std::memcpy(dst, src, bytes);
}

void CpuFp32Backend::FillRopeTable(const RopeParams& params, int64_t max_positions,
                                   int64_t head_dim, float* cos, float* sin) const {
  RopeTableEntries(params, max_positions, head_dim, cos, sin);
}

// ---- Model ops: the free functions of ops/cpu/*.h ----------------------------------------------

void CpuFp32Backend::LinearForward(const float* x, const float* W, int64_t N, int64_t in,
                                   int64_t out, float* y) const {
  replica::LinearForward(x, W, N, in, out, y, matmul_);
}

void CpuFp32Backend::LinearBackward(const float* x, const float* W, const float* dy, int64_t N,
                                    int64_t in, int64_t out, float* dx, float* dW) const {
  replica::LinearBackward(x, W, dy, N, in, out, dx, dW, matmul_);
}

void CpuFp32Backend::RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n,
                                    double eps, float* y, float* rstd) const {
  replica::RMSNormForward(x, w, rows, n, eps, y, rstd);
}

void CpuFp32Backend::RMSNormAddForward(const float* x, const float* w, const float* residual,
                                       int64_t rows, int64_t n, double eps, float* y,
                                       float* rstd) const {
  replica::RMSNormAddForward(x, w, residual, rows, n, eps, y, rstd);
}

void CpuFp32Backend::RMSNormBackward(const float* x, const float* w, const float* rstd,
                                     const float* dy, int64_t rows, int64_t n, float* dx,
                                     float* dw) const {
  replica::RMSNormBackward(x, w, rstd, dy, rows, n, dx, dw);
}

void CpuFp32Backend::RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T,
                                 int64_t heads, const int32_t* positions, float* y) const {
  replica::RopeForward(table, x, B, T, heads, positions, y);
}

void CpuFp32Backend::RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T,
                                  int64_t heads, const int32_t* positions, float* dx) const {
  replica::RopeBackward(table, dy, B, T, heads, positions, dx);
}

void CpuFp32Backend::AttentionForward(const AttentionShape& s, const float* q, const float* k,
                                      const float* v, float* out, float* lse) const {
  replica::AttentionForward(s, q, k, v, out, lse, matmul_);
}

void CpuFp32Backend::AttentionBackward(const AttentionShape& s, const float* q, const float* k,
                                       const float* v, const float* out, const float* lse,
                                       const float* dout, float* dq, float* dk, float* dv) const {
  replica::AttentionBackward(s, q, k, v, out, lse, dout, dq, dk, dv, matmul_);
}

void CpuFp32Backend::SwiGLUForward(const float* g, const float* u, int64_t n, float* s) const {
  replica::SwiGLUForward(g, u, n, s);
}

void CpuFp32Backend::SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n,
                                    float* dg, float* du) const {
  replica::SwiGLUBackward(g, u, ds, n, dg, du);
}

void CpuFp32Backend::EmbeddingForward(const float* table, const int32_t* tokens, int64_t N,
                                      int64_t D, float* out) const {
  replica::EmbeddingForward(table, tokens, N, D, out);
}

void CpuFp32Backend::EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N,
                                       int64_t V, int64_t D, float* dtable) const {
  replica::EmbeddingBackward(tokens, dout, N, V, D, dtable);
}

CrossEntropySums CpuFp32Backend::LmHeadLossForward(const float* x, const float* W,
                                                   const int32_t* labels, int64_t N, int64_t D,
                                                   int64_t V, LmHeadWorkspace& ws) const {
  return replica::LmHeadLossForward(x, W, labels, N, D, V, ws, matmul_);
}

CrossEntropySums CpuFp32Backend::LmHeadLossForwardBackward(
    const float* x, const float* W, const int32_t* labels, int64_t N, int64_t D, int64_t V,
    double grad_scale, double z_mul, LmHeadWorkspace& ws, float* dx, float* dW) const {
  return replica::LmHeadLossForwardBackward(x, W, labels, N, D, V, grad_scale, z_mul, ws, dx, dW,
                                            matmul_);
}

void CpuFp32Backend::LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                                  float* logits) const {
  replica::LinearForward(x, W, N, D, V, logits, matmul_);
}

// ---- Inference over stored weights --------------------------------------------------------------

void CpuFp32Backend::EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens,
                                            int64_t N, float* out) const {
  replica::EmbeddingForwardStored(table, tokens, N, out);
}

void CpuFp32Backend::MatVec(const StoredMatrix& W, const float* x, float* y) const {
  replica::MatVec(W.dtype, W.data, x, W.rows, W.cols, y, matmul_);
}

void CpuFp32Backend::AttentionDecode(const DecodeAttentionShape& s, const float* q,
                                     const float* k_cache, const float* v_cache, float* out,
                                     float* scores) const {
  replica::AttentionDecode(s, q, k_cache, v_cache, out, scores, matmul_);
}

// ---- Buffer math --------------------------------------------------------------------------------

void CpuFp32Backend::Zero(float* x, int64_t n) const {
  constexpr int64_t kBlock = int64_t{1} << 16;
#pragma omp parallel for schedule(static) if (n > kBlock)
  for (int64_t i = 0; i < n; i += kBlock) {
    std::memset(x + i, 0, static_cast<size_t>(std::min(kBlock, n - i)) * sizeof(float));
  }
}

void CpuFp32Backend::Copy(float* dst, const float* src, int64_t n) const {
  constexpr int64_t kBlock = int64_t{1} << 20;
#pragma omp parallel for schedule(static) if (n > kBlock)
  for (int64_t i = 0; i < n; i += kBlock) {
    std::memcpy(dst + i, src + i, static_cast<size_t>(std::min(kBlock, n - i)) * sizeof(float));
  }
}

void CpuFp32Backend::AddInto(float* acc, const float* x, int64_t n) const {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) acc[i] = x[i] + acc[i];
}

void CpuFp32Backend::MoveAndZero(float* dst, float* src, int64_t n) const {
  constexpr int64_t kBlock = int64_t{1} << 14;
#pragma omp parallel for schedule(static) if (n > kBlock)
  for (int64_t i = 0; i < n; i += kBlock) {
    const size_t k = static_cast<size_t>(std::min(kBlock, n - i));
    std::memcpy(dst + i, src + i, k * sizeof(float));
    std::memset(src + i, 0, k * sizeof(float));
  }
}

void CpuFp32Backend::Scale(float* x, int64_t n, double factor) const {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<double>(x[i]) * factor);
}

void CpuFp32Backend::SumSquaresPartials(const float* x, int64_t n, int64_t block,
                                        double* partials) const {
  const int64_t blocks = (n + block - 1) / block;
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t lo = b * block, hi = std::min(n, lo + block);
    double s = 0;
    for (int64_t i = lo; i < hi; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    partials[b] = s;
  }
}

void CpuFp32Backend::AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                                 const AdamWCoefficients& c) const {
  // Fixed-size chunks, each updated by one thread; the update is elementwise (ops/cpu/adamw.h),
  // so the split changes no bit.
  constexpr int64_t kChunk = int64_t{1} << 14;
#pragma omp parallel for schedule(static) if (n > kChunk)
  for (int64_t i = 0; i < n; i += kChunk) {
    AdamWElements(p + i, g + i, m + i, v + i, std::min(kChunk, n - i), c);
  }
}

const Backend& CpuBackend() {
  static const CpuFp32Backend backend;
  return backend;
}

}  // namespace replica
