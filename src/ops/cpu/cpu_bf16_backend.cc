#include "ops/cpu/cpu_bf16_backend.h"

#include "ops/cpu/attention.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/linear.h"

namespace replica {

void CpuBf16Backend::LinearForward(const float* x, const float* W, int64_t N, int64_t in,
                                   int64_t out, float* y) const {
  replica::LinearForward(x, W, N, in, out, y, Precision::kBf16);
}

void CpuBf16Backend::LinearBackward(const float* x, const float* W, const float* dy, int64_t N,
                                    int64_t in, int64_t out, float* dx, float* dW) const {
  replica::LinearBackward(x, W, dy, N, in, out, dx, dW, Precision::kBf16);
}

void CpuBf16Backend::AttentionForward(const AttentionShape& s, const float* q, const float* k,
                                      const float* v, float* out, float* lse) const {
  replica::AttentionForward(s, q, k, v, out, lse, Precision::kBf16);
}

void CpuBf16Backend::AttentionBackward(const AttentionShape& s, const float* q, const float* k,
                                       const float* v, const float* out, const float* lse,
                                       const float* dout, float* dq, float* dk, float* dv) const {
  replica::AttentionBackward(s, q, k, v, out, lse, dout, dq, dk, dv, Precision::kBf16);
}

CrossEntropySums CpuBf16Backend::LmHeadLossForward(const float* x, const float* W,
                                                   const int32_t* labels, int64_t N, int64_t D,
                                                   int64_t V, LmHeadWorkspace& ws) const {
  return replica::LmHeadLossForward(x, W, labels, N, D, V, ws, Precision::kBf16);
}

CrossEntropySums CpuBf16Backend::LmHeadLossForwardBackward(
    const float* x, const float* W, const int32_t* labels, int64_t N, int64_t D, int64_t V,
    double grad_scale, double z_mul, LmHeadWorkspace& ws, float* dx, float* dW) const {
  return replica::LmHeadLossForwardBackward(x, W, labels, N, D, V, grad_scale, z_mul, ws, dx, dW,
                                            Precision::kBf16);
}

void CpuBf16Backend::LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                                  float* logits) const {
  replica::LinearForward(x, W, N, D, V, logits, Precision::kBf16);
}

const Backend& BackendFor(Precision precision) {
  static const CpuBf16Backend bf16;
  return precision == Precision::kBf16 ? static_cast<const Backend&>(bf16) : CpuBackend();
}

}  // namespace replica
