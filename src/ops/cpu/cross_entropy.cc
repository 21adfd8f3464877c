#include "ops/cpu/cross_entropy.h"
#include "core/profile.h"
#include "ops/cpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/softmax_rows.h"

namespace replica {
namespace {

// Logits of rows [r0, r0 + rows) into the workspace, then per-row lse and CE. Each row of the
// buffer is left holding exp(logit - shift), shift near the row max (ops/cpu/softmax_rows.h), which the backward scales into dlogits.
void ChunkForward(const float* x, const float* W, const int32_t* labels, int64_t r0, int64_t rows,
                  int64_t D, int64_t V, LmHeadWorkspace& ws, Precision precision) {
  float* logits = ws.logits();
  Gemm(precision, LmHeadChunkGemms(rows, D, V)[0], 1.0f, x + r0 * D, D, W, D, 0.0f, logits, V);
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t y = labels[r0 + i];
    if (y == kIgnoreLabel) {
      ws.lse()[i] = ws.ce()[i] = 0;
      continue;
    }
    float* l = logits + i * V;
    const float label_logit = l[y];
    float m;  // the softmax shift: the row max, or within kShiftHeadroom below it
    const double sum = ExpSumAutoShiftInPlace(l, V, &m);  // Σ exp(l - m), fixed order, double
    ws.row_max()[i] = m;
    ws.row_sum()[i] = sum;
    const double lse = static_cast<double>(m) + std::log(sum);
    ws.lse()[i] = lse;
    ws.ce()[i] = lse - static_cast<double>(label_logit);
  }
}

}  // namespace

std::array<GemmShape, 3> LmHeadChunkGemms(int64_t rows, int64_t D, int64_t V) {
  return {GemmShape{false, true, rows, V, D, GemmB::kWeight},
          GemmShape{false, false, rows, D, V, GemmB::kWeight},
          GemmShape{true, false, V, D, rows, GemmB::kActivation}};
}

CrossEntropySums LmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                   int64_t N, int64_t D, int64_t V, LmHeadWorkspace& ws,
                                   Precision precision) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  Require(V == ws.vocab(), "LM head: vocab {} does not match workspace {}", V, ws.vocab());
  CrossEntropySums sums;
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkForward(x, W, labels, r0, rows, D, V, ws, precision);
    ws.AddChunkSums(labels + r0, rows, sums);
  }
  return sums;
}

CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W, const int32_t* labels,
                                           int64_t N, int64_t D, int64_t V, double grad_scale,
                                           double z_mul, LmHeadWorkspace& ws, float* dx,
                                           float* dW, Precision precision) {
  ProfileScope profile_scope(ProfileCategory::kLmHeadLoss);
  Require(V == ws.vocab(), "LM head: vocab {} does not match workspace {}", V, ws.vocab());
  CrossEntropySums sums;
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkForward(x, W, labels, r0, rows, D, V, ws, precision);
    ws.AddChunkSums(labels + r0, rows, sums);
    // dlogits = coef_row · e_row − grad_scale · onehot(y_row), where e_row = exp(l − shift) is what
    // the forward left in the buffer and coef_row = grad_scale (1 + 2 z lse) / Σ e folds the
    // normalisation and z-loss into one per-row factor. The factor is moved to the small [rows, D]
    // side so the [rows, V] buffer is never rewritten, and the label's entry is taken out of the
    // buffer and handled on its own as d_y = coef·e_y − grad_scale, rounded as one fp32 value (it
    // is where a confident prediction cancels, so it must not be split into two large terms):
    //   dx_row += coef_row · (e' W)_row + d_y · W[y_row]
    //   dW     += e'ᵀ (coef ⊙ x)      + Σ_rows d_y · onehot(y_row)ᵀ x_row     (e' = e, e'_y = 0)
    float* e = ws.logits();
    float* xs = ws.scaled_x(D);   // [rows, D] coef_row · x_row
    float* ew = ws.e_times_w(D);  // [rows, D] (e' W)_row
    const float gs = static_cast<float>(grad_scale);
    for (int64_t i = 0; i < rows; ++i) {
      const int32_t y = labels[r0 + i];
      float coef = 0.0f, dy = 0.0f;
      if (y == kIgnoreLabel) {
        std::fill(e + i * V, e + (i + 1) * V, 0.0f);  // the forward left raw logits there
      } else {
        coef = static_cast<float>(grad_scale * (1.0 + 2.0 * z_mul * ws.lse()[i]) / ws.row_sum()[i]);
        dy = coef * e[i * V + y] - gs;
        e[i * V + y] = 0.0f;
      }
      ws.row_coef()[i] = dy;
      for (int64_t k = 0; k < D; ++k) xs[i * D + k] = coef * x[(r0 + i) * D + k];
    }
    const std::array<GemmShape, 3> g = LmHeadChunkGemms(rows, D, V);
    Gemm(precision, g[1], 1.0f, e, V, W, D, 0.0f, ew, D);
    Gemm(precision, g[2], 1.0f, e, V, xs, D, 1.0f, dW, D);
    const bool bf16 = precision == Precision::kBf16;
    for (int64_t i = 0; i < rows; ++i) {  // in row order: rows may share a label
      const int32_t y = labels[r0 + i];
      if (y == kIgnoreLabel) continue;
      const float dy = ws.row_coef()[i];
      const float coef = static_cast<float>(grad_scale * (1.0 + 2.0 * z_mul * ws.lse()[i]) /
                                            ws.row_sum()[i]);
      float* dxr = dx + (r0 + i) * D;
      const float* wy = W + static_cast<int64_t>(y) * D;
      const float* xr = x + (r0 + i) * D;
      float* dwy = dW + static_cast<int64_t>(y) * D;
      for (int64_t k = 0; k < D; ++k) {
        const float w = bf16 ? RoundToBf16(wy[k]) : wy[k];
        const float xk = bf16 ? RoundToBf16(xr[k]) : xr[k];
        dxr[k] += coef * ew[i * D + k] + dy * w;
        dwy[k] += dy * xk;
      }
    }
  }
  return sums;
}

CrossEntropySums LmHeadLossReference(const float* x, const float* W, const int32_t* labels,
                                     int64_t N, int64_t D, int64_t V, double grad_scale,
                                     double z_mul, float* dx, float* dW, Precision precision) {
  const bool bf16 = precision == Precision::kBf16;
  std::vector<float> xr(x, x + N * D), Wr(W, W + V * D);
  if (bf16) {
    RoundToBf16(xr.data(), xr.data(), N * D);
    RoundToBf16(Wr.data(), Wr.data(), V * D);
  }
  x = xr.data();
  W = Wr.data();
  CrossEntropySums sums;
  std::vector<double> logits(static_cast<size_t>(V)), dl(static_cast<size_t>(V));
  std::vector<double> dxrow(static_cast<size_t>(D));
  for (int64_t i = 0; i < N; ++i) {
    const int32_t y = labels[i];
    if (y == kIgnoreLabel) continue;
    double m = -std::numeric_limits<double>::infinity();
    for (int64_t v = 0; v < V; ++v) {
      double acc = 0;
      for (int64_t k = 0; k < D; ++k) acc += static_cast<double>(x[i * D + k]) * W[v * D + k];
      logits[v] = acc;
      m = std::max(m, acc);
    }
    double s = 0;
    for (int64_t v = 0; v < V; ++v) s += std::exp(logits[v] - m);
    const double lse = m + std::log(s);
    sums.ce_sum += lse - logits[y];
    sums.lse_sq_sum += lse * lse;
    sums.tokens += 1;
    if (!dx && !dW) continue;
    for (int64_t v = 0; v < V; ++v) {
      dl[v] = grad_scale * std::exp(logits[v] - lse) * (1 + 2 * z_mul * lse);
    }
    dl[y] -= grad_scale;
    if (bf16)
      for (int64_t v = 0; v < V; ++v) dl[v] = RoundToBf16(static_cast<float>(dl[v]));
    std::fill(dxrow.begin(), dxrow.end(), 0.0);
    for (int64_t v = 0; v < V; ++v)
      for (int64_t k = 0; k < D; ++k) {
        dxrow[k] += dl[v] * W[v * D + k];
        if (dW) dW[v * D + k] += static_cast<float>(dl[v] * x[i * D + k]);
      }
    if (dx)
      for (int64_t k = 0; k < D; ++k) dx[i * D + k] += static_cast<float>(dxrow[k]);
  }
  return sums;
}

}  // namespace replica
