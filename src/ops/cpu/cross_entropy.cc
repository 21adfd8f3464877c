#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "ops/cpu/gemm.h"

namespace replica {
namespace {

// Max of a row and Σ exp(l - max) accumulated in double; lse = max + log(sum).
void RowMaxSum(const float* l, int64_t V, float* max_out, double* sum_out) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t v = 0; v < V; ++v) m = std::max(m, l[v]);
  double sum = 0;
  for (int64_t v = 0; v < V; ++v) sum += std::exp(l[v] - m);
  *max_out = m;
  *sum_out = sum;
}

// Logits of rows [r0, r0 + rows) into the workspace, then per-row lse and CE.
void ChunkForward(const float* x, const float* W, const int32_t* labels, int64_t r0, int64_t rows,
                  int64_t D, int64_t V, LmHeadWorkspace& ws) {
  float* logits = ws.logits();
  Sgemm(false, true, rows, V, D, 1.0f, x + r0 * D, D, W, D, 0.0f, logits, V);
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t y = labels[r0 + i];
    if (y == kIgnoreLabel) {
      ws.lse()[i] = ws.ce()[i] = 0;
      continue;
    }
    const float* l = logits + i * V;
    RowMaxSum(l, V, &ws.row_max()[i], &ws.row_sum()[i]);
    const double lse = static_cast<double>(ws.row_max()[i]) + std::log(ws.row_sum()[i]);
    ws.lse()[i] = lse;
    ws.ce()[i] = lse - static_cast<double>(l[y]);
  }
}

void AddChunkSums(const int32_t* labels, int64_t r0, int64_t rows, LmHeadWorkspace& ws,
                  CrossEntropySums& sums) {
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[r0 + i] == kIgnoreLabel) continue;
    sums.ce_sum += ws.ce()[i];
    sums.lse_sq_sum += ws.lse()[i] * ws.lse()[i];
    sums.tokens += 1;
  }
}

}  // namespace

LmHeadWorkspace::LmHeadWorkspace(int64_t max_rows, int64_t vocab, int64_t scratch_floats)
    : vocab_(vocab) {
  Require(vocab > 0 && max_rows > 0, "LM head workspace: bad shape rows={} vocab={}", max_rows,
          vocab);
  chunk_rows_ = std::clamp<int64_t>(scratch_floats / vocab, 1, max_rows);
  logits_.resize(static_cast<size_t>(chunk_rows_ * vocab));
  lse_.resize(static_cast<size_t>(chunk_rows_));
  ce_.resize(static_cast<size_t>(chunk_rows_));
  sum_.resize(static_cast<size_t>(chunk_rows_));
  max_.resize(static_cast<size_t>(chunk_rows_));
}

CrossEntropySums LmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                   int64_t N, int64_t D, int64_t V, LmHeadWorkspace& ws) {
  Require(V == ws.vocab(), "LM head: vocab {} does not match workspace {}", V, ws.vocab());
  CrossEntropySums sums;
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkForward(x, W, labels, r0, rows, D, V, ws);
    AddChunkSums(labels, r0, rows, ws, sums);
  }
  return sums;
}

CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W, const int32_t* labels,
                                           int64_t N, int64_t D, int64_t V, double grad_scale,
                                           double z_mul, LmHeadWorkspace& ws, float* dx,
                                           float* dW) {
  Require(V == ws.vocab(), "LM head: vocab {} does not match workspace {}", V, ws.vocab());
  CrossEntropySums sums;
  for (int64_t r0 = 0; r0 < N; r0 += ws.chunk_rows()) {
    const int64_t rows = std::min(ws.chunk_rows(), N - r0);
    ChunkForward(x, W, labels, r0, rows, D, V, ws);
    AddChunkSums(labels, r0, rows, ws, sums);
    float* dl = ws.logits();  // logits become dlogits in place
#pragma omp parallel for schedule(static) if (rows * V >= kMinParallelWork)
    for (int64_t i = 0; i < rows; ++i) {
      float* l = dl + i * V;
      const int32_t y = labels[r0 + i];
      if (y == kIgnoreLabel) {
        std::fill(l, l + V, 0.0f);
        continue;
      }
      // softmax = exp(l - max) / sum, with the exponent taken exactly as in the forward; the
      // normalisation folds into one per-row factor computed in double.
      const double lse = ws.lse()[i];
      const float m = ws.row_max()[i];
      const float coef =
          static_cast<float>(grad_scale * (1.0 + 2.0 * z_mul * lse) / ws.row_sum()[i]);
      for (int64_t v = 0; v < V; ++v) l[v] = coef * std::exp(l[v] - m);
      l[y] -= static_cast<float>(grad_scale);
    }
    Sgemm(false, false, rows, D, V, 1.0f, dl, V, W, D, 1.0f, dx + r0 * D, D);
    Sgemm(true, false, V, D, rows, 1.0f, dl, V, x + r0 * D, D, 1.0f, dW, D);
  }
  return sums;
}

CrossEntropySums LmHeadLossReference(const float* x, const float* W, const int32_t* labels,
                                     int64_t N, int64_t D, int64_t V, double grad_scale,
                                     double z_mul, float* dx, float* dW) {
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
