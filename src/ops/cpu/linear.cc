#include "ops/cpu/linear.h"

#include "ops/cpu/gemm_bf16.h"

namespace replica {

void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out, float* y,
                   Precision precision) {
  if (N == 0 || out == 0) return;
  Gemm(precision, false, true, N, out, in, 1.0f, x, in, W, in, 0.0f, y, out, GemmB::kWeight);
}

void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                    int64_t out, float* dx, float* dW, Precision precision) {
  if (N == 0) return;
  if (dx) {
    Gemm(precision, false, false, N, in, out, 1.0f, dy, out, W, in, 1.0f, dx, in, GemmB::kWeight);
  }
  Gemm(precision, true, false, out, in, N, 1.0f, dy, out, x, in, 1.0f, dW, in);
}

void LinearForwardReference(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                            float* y) {
  for (int64_t i = 0; i < N; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0;
      for (int64_t k = 0; k < in; ++k) acc += static_cast<double>(x[i * in + k]) * W[o * in + k];
      y[i * out + o] = static_cast<float>(acc);
    }
}

void LinearBackwardReference(const float* x, const float* W, const float* dy, int64_t N,
                             int64_t in, int64_t out, float* dx, float* dW) {
  if (dx) {
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < in; ++k) {
        double acc = 0;
        for (int64_t o = 0; o < out; ++o) acc += static_cast<double>(dy[i * out + o]) * W[o * in + k];
        dx[i * in + k] += static_cast<float>(acc);
      }
  }
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < in; ++k) {
      double acc = 0;
      for (int64_t i = 0; i < N; ++i) acc += static_cast<double>(dy[i * out + o]) * x[i * in + k];
      dW[o * in + k] += static_cast<float>(acc);
    }
}

}  // namespace replica
