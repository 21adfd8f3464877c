// The bf16 mixed-precision CPU backend (docs/precision.md): the fp32 CPU backend with every
// matmul-bearing op fed bf16 operands and accumulating in fp32 — the linear layers (forward and
// both backward products), attention's QKᵀ and PV (forward and backward) and the LM head (loss,
// loss with its backward, and logits). Each override is the op of the same name called with
// Precision::kBf16, so that op's header states its numerics and determinism. Norms, RoPE, SwiGLU,
// the embedding, softmax statistics, cross-entropy, z-loss and the buffer math are inherited fp32.
//
// BackendFor(precision) returns the one instance of the backend for a precision: CpuBackend() for
// kFp32, CpuBf16Backend for kBf16. Both live for the whole process.
#pragma once
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/precision.h"

namespace replica {

class CpuBf16Backend : public CpuFp32Backend {
 public:
  const char* name() const override { return "cpu-bf16"; }

  void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                     float* y) const override;
  void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                      int64_t out, float* dx, float* dW) const override;
  void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        float* out, float* lse) const override;
  void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                         const float* out, const float* lse, const float* dout, float* dq,
                         float* dk, float* dv) const override;
  CrossEntropySums LmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                     int64_t N, int64_t D, int64_t V,
                                     LmHeadWorkspace& ws) const override;
  CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W,
                                             const int32_t* labels, int64_t N, int64_t D,
                                             int64_t V, double grad_scale, double z_mul,
                                             LmHeadWorkspace& ws, float* dx,
                                             float* dW) const override;
  void LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                    float* logits) const override;
};

// The backend whose matmuls are fed `precision` (CpuBackend() for kFp32).
const Backend& BackendFor(Precision precision);

}  // namespace replica
