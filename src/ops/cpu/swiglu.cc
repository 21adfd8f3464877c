#include "ops/cpu/swiglu.h"
#include "ops/cpu/parallel.h"

#include <cmath>

namespace replica {

void SwiGLUForward(const float* g, const float* u, int64_t n, float* s) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    const float sig = 1.0f / (1.0f + std::exp(-g[i]));
    s[i] = (g[i] * sig) * u[i];
  }
}

void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                    float* du) {
#pragma omp parallel for schedule(static) if (n >= kMinParallelWork)
  for (int64_t i = 0; i < n; ++i) {
    const float sig = 1.0f / (1.0f + std::exp(-g[i]));
    const float silu = g[i] * sig;
    dg[i] += ds[i] * u[i] * (sig * (1.0f + g[i] * (1.0f - sig)));
    du[i] += ds[i] * silu;
  }
}

void SwiGLUForwardReference(const float* g, const float* u, int64_t n, float* s) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = g[i], sig = 1.0 / (1.0 + std::exp(-x));
    s[i] = static_cast<float>(x * sig * u[i]);
  }
}

void SwiGLUBackwardReference(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                             float* du) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = g[i], sig = 1.0 / (1.0 + std::exp(-x));
    dg[i] += static_cast<float>(static_cast<double>(ds[i]) * u[i] * sig * (1 + x * (1 - sig)));
    du[i] += static_cast<float>(static_cast<double>(ds[i]) * x * sig);
  }
}

}  // namespace replica
