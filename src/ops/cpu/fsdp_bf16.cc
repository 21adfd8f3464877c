// The bf16-fsdp ops other than attention (fsdp_bf16.h): each computes as the fp32 op of this
// folder does, on rounded parameters, and rounds where torch's bf16 tensors are stored.
#include "ops/cpu/fsdp_bf16.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/profile.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/linear.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/rope.h"

namespace replica {
namespace {

inline float R(float x) { return RoundToBf16(x); }

// Scratch that lives with the calling thread and grows to the largest call (the ops are not
// re-entered on a thread). Zeroed on request.
float* Scratch(std::vector<float>& buffer, int64_t n, bool zero) {
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
  if (zero) std::fill_n(buffer.data(), n, 0.0f);
  return buffer.data();
}
thread_local std::vector<float> tls_a, tls_b, tls_w;

// acc = R(acc + R(t)): a second gradient added to a bf16 activation gradient.
void AddActivationGrad(float* acc, const float* t, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) acc[i] = R(acc[i] + R(t[i]));
}
// acc += R(t): a parameter's bf16 gradient added to its fp32 sum.
void AddParamGrad(float* acc, const float* t, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) acc[i] += R(t[i]);
}
// The rounded copy of a (small) parameter vector.
const float* Rounded(const float* w, int64_t n) {
  float* r = Scratch(tls_w, n, false);
  RoundToBf16(w, r, n);
  return r;
}

// Σ x² in double, sequentially; the statistic torch keeps in fp32 is this sum's fp32 mean.
float RowRstd(const float* x, int64_t n, double eps) {
  double ss = 0;
  for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(x[j]) * x[j];
  const float var = static_cast<float>(ss / static_cast<double>(n));
  return 1.0f / std::sqrt(var + static_cast<float>(eps));
}

template <bool kResidual>
void NormRows(const float* x, const float* w, const float* residual, int64_t rows, int64_t n,
              double eps, float* y, float* rstd) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  const float* wr = Rounded(w, n);
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const float s = RowRstd(xr, n, eps);
    rstd[r] = s;
    for (int64_t j = 0; j < n; ++j) {
      const float normed = R(wr[j] * (xr[j] * s));
      yr[j] = kResidual ? R(residual[r * n + j] + normed) : normed;
    }
  }
}

}  // namespace

void FsdpLinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                       float* y) {
  LinearForward(x, W, N, in, out, y, Precision::kBf16);
  RoundToBf16(y, y, N * out);
}

void FsdpLinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                        int64_t out, float* dx, float* dW) {
  if (dx) {
    float* t = Scratch(tls_a, N * in, false);
    Gemm(Precision::kBf16, false, false, N, in, out, 1.0f, dy, out, W, in, 0.0f, t, in,
         GemmB::kWeight);
    AddActivationGrad(dx, t, N * in);
  }
  float* t = Scratch(tls_b, out * in, false);
  Gemm(Precision::kBf16, true, false, out, in, N, 1.0f, dy, out, x, in, 0.0f, t, in);
  AddParamGrad(dW, t, out * in);
}

void FsdpRMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                        float* y, float* rstd) {
  NormRows<false>(x, w, nullptr, rows, n, eps, y, rstd);
}

void FsdpRMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                           int64_t n, double eps, float* y, float* rstd) {
  NormRows<true>(x, w, residual, rows, n, eps, y, rstd);
}

void FsdpRMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                         int64_t rows, int64_t n, float* dx, float* dw) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  const float* wr = Rounded(w, n);
  const float inv_n = 1.0f / static_cast<float>(n);
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* gr = dy + r * n;
    const float s = rstd[r];
    // y = w·xn, xn = x·s, s = (mean x² + eps)^-1/2: dxn = w·g; ds = Σ dxn·x;
    // d(mean x²) = −s³/2 · ds; dx = dxn·s + 2x · d(mean x²)/n.
    double ds = 0;
    for (int64_t j = 0; j < n; ++j) ds += static_cast<double>(wr[j] * gr[j]) * xr[j];
    const float dvar = static_cast<float>(ds) * (-0.5f * s * s * s);
    float* dxr = dx + r * n;
    for (int64_t j = 0; j < n; ++j) {
      const float t = (wr[j] * gr[j]) * s + 2.0f * xr[j] * (dvar * inv_n);
      dxr[j] = R(dxr[j] + R(t));
    }
  }
  // dw[j] = R(Σ_r g·xn) per column, rows in order.
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t j = 0; j < n; ++j) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r)
      acc += static_cast<double>(dy[r * n + j]) * static_cast<double>(x[r * n + j] * rstd[r]);
    dw[j] += R(static_cast<float>(acc));
  }
}

void FsdpRopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                     float* y) {
  RopeForward(table, x, B, T, heads, y);
  RoundToBf16(y, y, B * T * heads * table.head_dim);
}

void FsdpRopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T,
                      int64_t heads, float* dx) {
  const int64_t n = B * T * heads * table.head_dim;
  float* t = Scratch(tls_a, n, true);
  RopeBackward(table, dy, B, T, heads, t);
  AddActivationGrad(dx, t, n);
}

namespace {
inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

void FsdpSwiGLUForward(const float* g, const float* u, int64_t n, float* s) {
  ProfileScope profile_scope(ProfileCategory::kSwiGLU);
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) s[i] = R(R(g[i] * Sigmoid(g[i])) * u[i]);
}

void FsdpSwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                        float* du) {
  ProfileScope profile_scope(ProfileCategory::kSwiGLU);
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    const float sg = Sigmoid(g[i]);
    const float a = R(g[i] * sg);
    const float da = R(ds[i] * u[i]);
    du[i] = R(du[i] + R(ds[i] * a));
    dg[i] = R(dg[i] + R(da * (sg * (1.0f + g[i] * (1.0f - sg)))));
  }
}

void FsdpEmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                          float* out) {
#pragma omp parallel for schedule(static) if (N * D >= kMinParallelWork)
  for (int64_t i = 0; i < N; ++i) RoundToBf16(table + int64_t{tokens[i]} * D, out + i * D, D);
}

void FsdpEmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V,
                           int64_t D, float* dtable) {
  // Rows of the bf16 gradient table, each token's positions added in position order; only rows
  // of tokens that occur are touched. One pass per token row keeps the order fixed for any
  // thread count: positions are grouped by token first (a stable counting sort).
  std::vector<int64_t> start(static_cast<size_t>(V) + 1, 0), order(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) ++start[static_cast<size_t>(tokens[i]) + 1];
  for (int64_t v = 0; v < V; ++v) start[v + 1] += start[v];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < N; ++i) order[static_cast<size_t>(fill[tokens[i]]++)] = i;
#pragma omp parallel for schedule(dynamic, 16) if (N * D >= kMinParallelWork)
  for (int64_t v = 0; v < V; ++v) {
    if (start[v] == start[v + 1]) continue;
    std::vector<float> row(static_cast<size_t>(D), 0.0f);
    for (int64_t p = start[v]; p < start[v + 1]; ++p) {
      const float* src = dout + order[static_cast<size_t>(p)] * D;
      for (int64_t j = 0; j < D; ++j) row[j] = R(row[j] + src[j]);
    }
    float* dst = dtable + v * D;
    for (int64_t j = 0; j < D; ++j) dst[j] += row[j];
  }
}

namespace {

// One chunk's rounded logits [rows, V] in ws.logits(), and per row lse and ce into ws.
void ChunkLogitsAndLoss(const float* x, const float* W, const int32_t* labels, int64_t r0,
                        int64_t rows, int64_t D, int64_t V, LmHeadWorkspace& ws) {
  float* logits = ws.logits();
  Gemm(Precision::kBf16, false, true, rows, V, D, 1.0f, x + r0 * D, D, W, D, 0.0f, logits, V,
       GemmB::kWeight);
  RoundToBf16(logits, logits, rows * V);
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* lr = logits + r * V;
    const float mx = *std::max_element(lr, lr + V);
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(lr[v]) - mx);
    const double lse = mx + std::log(sum);
    ws.lse()[r] = lse;
    const int32_t y = labels[r0 + r];
    ws.ce()[r] = y == kIgnoreLabel ? 0.0 : lse - lr[y];
  }
}

void AddChunkSums(const int32_t* labels, int64_t r0, int64_t rows, LmHeadWorkspace& ws,
                  CrossEntropySums& sums) {
  for (int64_t r = 0; r < rows; ++r) {
    if (labels[r0 + r] == kIgnoreLabel) continue;
    sums.ce_sum += ws.ce()[r];
    sums.lse_sq_sum += ws.lse()[r] * ws.lse()[r];
    ++sums.tokens;
  }
}

}  // namespace

CrossEntropySums FsdpLmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                       int64_t N, int64_t D, int64_t V, LmHeadWorkspace& ws) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  CrossEntropySums sums;
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkLogitsAndLoss(x, W, labels, r0, rows, D, V, ws);
    AddChunkSums(labels, r0, rows, ws, sums);
  }
  return sums;
}

CrossEntropySums FsdpLmHeadLossForwardBackward(const float* x, const float* W,
                                               const int32_t* labels, int64_t N, int64_t D,
                                               int64_t V, double grad_scale, double z_mul,
                                               LmHeadWorkspace& ws, float* dx, float* dW) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  CrossEntropySums sums;
  float* dw_sum = Scratch(tls_b, V * D, true);  // the fp32 product over all rows, rounded once
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkLogitsAndLoss(x, W, labels, r0, rows, D, V, ws);
    AddChunkSums(labels, r0, rows, ws, sums);
    float* d = ws.logits();  // becomes dlogits in place
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
    for (int64_t r = 0; r < rows; ++r) {
      float* dr = d + r * V;
      const int32_t y = labels[r0 + r];
      if (y == kIgnoreLabel) {
        std::fill_n(dr, V, 0.0f);
        continue;
      }
      const double lse = ws.lse()[r];
      const double factor = grad_scale * (1.0 + 2.0 * z_mul * lse);
      for (int64_t v = 0; v < V; ++v) {
        double g = factor * std::exp(static_cast<double>(dr[v]) - lse);
        if (v == y) g -= grad_scale;
        dr[v] = R(static_cast<float>(g));
      }
    }
    float* t = Scratch(tls_a, rows * D, false);
    Gemm(Precision::kBf16, false, false, rows, D, V, 1.0f, d, V, W, D, 0.0f, t, D,
         GemmB::kWeight);
    AddActivationGrad(dx + r0 * D, t, rows * D);
    Gemm(Precision::kBf16, true, false, V, D, rows, 1.0f, d, V, x + r0 * D, D, 1.0f, dw_sum, D);
  }
  AddParamGrad(dW, dw_sum, V * D);
  return sums;
}

void FsdpLmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                      float* logits) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  Gemm(Precision::kBf16, false, true, N, V, D, 1.0f, x, D, W, D, 0.0f, logits, V, GemmB::kWeight);
  RoundToBf16(logits, logits, N * V);
}

}  // namespace replica
