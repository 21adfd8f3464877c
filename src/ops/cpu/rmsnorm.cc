#include "ops/cpu/rmsnorm.h"
#include "core/profile.h"
#include "ops/cpu/parallel.h"

#include <algorithm>
#include <cmath>

namespace replica {
namespace {
// Columns of dw reduced by one thread at a time: 64 double accumulators stay in registers/L1 while
// the thread walks all rows in order.
constexpr int64_t kColumnTile = 64;

template <bool kResidual>
void NormRows(const float* x, const float* w, const float* residual, int64_t rows, int64_t n,
              double eps, float* y, float* rstd) {
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(xr[j]) * xr[j];
    const float s = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
    rstd[r] = s;
    if constexpr (kResidual) {
      const float* rr = residual + r * n;
      for (int64_t j = 0; j < n; ++j) yr[j] = rr[j] + w[j] * (xr[j] * s);
    } else {
      for (int64_t j = 0; j < n; ++j) yr[j] = w[j] * (xr[j] * s);
    }
  }
}

}  // namespace

void RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps, float* y,
                    float* rstd) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  NormRows<false>(x, w, nullptr, rows, n, eps, y, rstd);
}

void RMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                       int64_t n, double eps, float* y, float* rstd) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  NormRows<true>(x, w, residual, rows, n, eps, y, rstd);
}

void RMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                     int64_t rows, int64_t n, float* dx, float* dw) {
  ProfileScope profile_scope(ProfileCategory::kNorm);
  const double inv_n = 1.0 / static_cast<double>(n);
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    const float* dyr = dy + r * n;
    float* dxr = dx + r * n;
    double dot = 0;  // Σ_k w[k] dy[k] x[k]
    for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(w[j] * dyr[j]) * xr[j];
    const float s = rstd[r];
    const float c = static_cast<float>(dot * inv_n * s * s * s);
    for (int64_t j = 0; j < n; ++j) dxr[j] += s * (w[j] * dyr[j]) - c * xr[j];
  }
  const int64_t tiles = (n + kColumnTile - 1) / kColumnTile;
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t j0 = t * kColumnTile, j1 = std::min(n, j0 + kColumnTile);
    double acc[kColumnTile] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * n;
      const float* dyr = dy + r * n;
      const float s = rstd[r];
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += static_cast<double>(dyr[j] * (xr[j] * s));
    }
    for (int64_t j = j0; j < j1; ++j) dw[j] += static_cast<float>(acc[j - j0]);
  }
}

void RMSNormForwardReference(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                             float* y, float* rstd) {
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < n; ++j) ss += static_cast<double>(x[r * n + j]) * x[r * n + j];
    rstd[r] = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
    for (int64_t j = 0; j < n; ++j) y[r * n + j] = w[j] * (x[r * n + j] * rstd[r]);
  }
}

void RMSNormBackwardReference(const float* x, const float* w, const float* rstd, const float* dy,
                              int64_t rows, int64_t n, float* dx, float* dw) {
  for (int64_t r = 0; r < rows; ++r) {
    double s = rstd[r], dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += static_cast<double>(w[j]) * dy[r * n + j] * x[r * n + j];
    for (int64_t j = 0; j < n; ++j) {
      double g = s * w[j] * dy[r * n + j] - dot / n * s * s * s * x[r * n + j];
      dx[r * n + j] += static_cast<float>(g);
      dw[j] += static_cast<float>(static_cast<double>(dy[r * n + j]) * x[r * n + j] * s);
    }
  }
}

}  // namespace replica
