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

// Σ_j a[j]·b[j] in double over 8 interleaved partial sums (element j into partial j % 8, in
// increasing j), then added pairwise in a fixed order: 8 independent dependency chains instead of
// one (a single chain of double adds made these passes latency-bound), the same bits on every
// machine and thread count.
constexpr int64_t kPartials = 8;
inline double PartialsTotal(const double* p) {
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}
double SumSquares(const float* a, int64_t n) {
  double p[kPartials] = {};
  int64_t j = 0;
  for (; j + kPartials <= n; j += kPartials) {
    for (int64_t k = 0; k < kPartials; ++k)
      p[k] += static_cast<double>(a[j + k]) * static_cast<double>(a[j + k]);
  }
  for (; j < n; ++j) p[j % kPartials] += static_cast<double>(a[j]) * static_cast<double>(a[j]);
  return PartialsTotal(p);
}
// Σ_j (float)(w[j]·dy[j]) · x[j] in the same order.
double WeightedDot(const float* w, const float* dy, const float* x, int64_t n) {
  double p[kPartials] = {};
  int64_t j = 0;
  for (; j + kPartials <= n; j += kPartials) {
    for (int64_t k = 0; k < kPartials; ++k)
      p[k] += static_cast<double>(w[j + k] * dy[j + k]) * static_cast<double>(x[j + k]);
  }
  for (; j < n; ++j) p[j % kPartials] += static_cast<double>(w[j] * dy[j]) * x[j];
  return PartialsTotal(p);
}

template <bool kResidual>
void NormRows(const float* x, const float* w, const float* residual, int64_t rows, int64_t n,
              double eps, float* y, float* rstd) {
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    const double ss = SumSquares(xr, n);
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
    const double dot = WeightedDot(w, dyr, xr, n);  // Σ_k w[k] dy[k] x[k]
    const float s = rstd[r];
    const float c = static_cast<float>(dot * inv_n * s * s * s);
    for (int64_t j = 0; j < n; ++j) dxr[j] += s * (w[j] * dyr[j]) - c * xr[j];
  }
  const int64_t tiles = (n + kColumnTile - 1) / kColumnTile;
#pragma omp parallel for schedule(static) if (rows * n >= kMinParallelWork)
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t j0 = t * kColumnTile, j1 = std::min(n, j0 + kColumnTile);
    double acc[kColumnTile] = {};
    if (j1 - j0 == kColumnTile) {  // a fixed trip count the compiler vectorises (same order)
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n + j0;
        const float* dyr = dy + r * n + j0;
        const float s = rstd[r];
        for (int64_t j = 0; j < kColumnTile; ++j) acc[j] += static_cast<double>(dyr[j] * (xr[j] * s));
      }
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * n;
        const float* dyr = dy + r * n;
        const float s = rstd[r];
        for (int64_t j = j0; j < j1; ++j) acc[j - j0] += static_cast<double>(dyr[j] * (xr[j] * s));
      }
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
