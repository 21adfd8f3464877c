// The bf16-fsdp CPU backend (docs/precision.md): the bf16 backend's matmuls with every model op
// rounding as torch does on the bf16 tensors of OLMo-core's FSDP mixed precision
// (ops/cpu/fsdp_bf16.h). The buffer math (gradient sums, reductions, AdamW on the fp32 master
// weights) is the fp32 backend's. Registered as device "cpu", precision bf16-fsdp.
#pragma once
#include "ops/cpu/cpu_bf16_backend.h"

namespace replica {

class CpuBf16FsdpBackend : public CpuBf16Backend {
 public:
  const char* name() const override { return "cpu-bf16-fsdp"; }
  StepScratch StepScratchBytes(const StepShape& s) const override;  // step_scratch.cc
  // OLMo-core's fp32 table for plain RoPE (TorchRopeTableEntries).
  void FillRopeTable(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                     float* cos, float* sin) const override;

  void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                     float* y) const override;
  void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                      int64_t out, float* dx, float* dW) const override;
  void RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                      float* y, float* rstd) const override;
  void RMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                         int64_t n, double eps, float* y, float* rstd) const override;
  void RMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                       int64_t rows, int64_t n, float* dx, float* dw) const override;
  void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                   const int32_t* positions,
                   float* y) const override;
  void RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T, int64_t heads,
                    const int32_t* positions,
                    float* dx) const override;
  void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        float* out, float* lse) const override;
  void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                         const float* out, const float* lse, const float* dout, float* dq,
                         float* dk, float* dv) const override;
  void SwiGLUForward(const float* g, const float* u, int64_t n, float* s) const override;
  void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                      float* du) const override;
  void EmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                        float* out) const override;
  void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V, int64_t D,
                         float* dtable) const override;
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

}  // namespace replica
