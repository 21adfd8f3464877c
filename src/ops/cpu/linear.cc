#include "ops/cpu/linear.h"

namespace replica {

std::array<GemmShape, 3> LinearGemms(int64_t N, int64_t in, int64_t out) {
  return {GemmShape{false, true, N, out, in, GemmB::kWeight},
          GemmShape{false, false, N, in, out, GemmB::kWeight},
          GemmShape{true, false, out, in, N, GemmB::kActivation}};
}

void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out, float* y,
                   Precision precision) {
  if (N == 0 || out == 0) return;
  Gemm(precision, LinearGemms(N, in, out)[0], 1.0f, x, in, W, in, 0.0f, y, out);
}

void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                    int64_t out, float* dx, float* dW, Precision precision) {
  if (N == 0) return;
  const std::array<GemmShape, 3> g = LinearGemms(N, in, out);
  if (dx) Gemm(precision, g[1], 1.0f, dy, out, W, in, 1.0f, dx, in);
  Gemm(precision, g[2], 1.0f, dy, out, x, in, 1.0f, dW, in);
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
