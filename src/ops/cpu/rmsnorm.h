// RMSNorm with a weight over the last dimension (docs/design.md §2.4: fp32 storage, the row statistic
// accumulated in double). Used for the block norms, the final norm and the QK-norm, which is one
// RMSNorm over the whole H*hd (or KV*hd) projection of a token, not per head.
// Rows are independent and each is owned by one thread; the weight gradient is reduced over rows
// in row order per column, so results are bit-identical for any thread count.
#pragma once
#include <cstdint>

namespace replica {

// x, y [rows, n]; w [n]; rstd [rows] (saved for backward)
//   rstd[r] = 1 / sqrt(mean_j x[r,j]² + eps);   y[r,j] = w[j] * (x[r,j] * rstd[r])
// y may alias x.
void RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps, float* y,
                    float* rstd);

// The post-norm residual add of a block, fused: y[r,j] = residual[r,j] + w[j] * (x[r,j] * rstd[r]).
// Its backward is RMSNormBackward (the residual's gradient passes through unchanged).
// y may alias residual but not x.
void RMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                       int64_t n, double eps, float* y, float* rstd);

// Backward of RMSNormForward; accumulates (+=) into dx [rows, n] and dw [n].
//   dx[r,j] += rstd * (w[j] dy[r,j]) - rstd³/n * x[r,j] * Σ_k w[k] dy[r,k] x[r,k]
//   dw[j]   += Σ_r dy[r,j] * x[r,j] * rstd[r]
// dx must not alias x or dy.
void RMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                     int64_t rows, int64_t n, float* dx, float* dw);

// Plain scalar references (single thread, straightforward loops) for the tests.
void RMSNormForwardReference(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                             float* y, float* rstd);
void RMSNormBackwardReference(const float* x, const float* w, const float* rstd, const float* dy,
                              int64_t rows, int64_t n, float* dx, float* dw);

}  // namespace replica
