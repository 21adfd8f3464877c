#include "ops/cpu/cpu_bf16_fsdp_backend.h"

#include "ops/cpu/fsdp_bf16.h"
#include "ops/registry.h"

namespace replica {

void CpuBf16FsdpBackend::LinearForward(const float* x, const float* W, int64_t N, int64_t in,
                                       int64_t out, float* y) const {
  FsdpLinearForward(x, W, N, in, out, y);
}
void CpuBf16FsdpBackend::LinearBackward(const float* x, const float* W, const float* dy,
                                        int64_t N, int64_t in, int64_t out, float* dx,
                                        float* dW) const {
  FsdpLinearBackward(x, W, dy, N, in, out, dx, dW);
}
void CpuBf16FsdpBackend::RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n,
                                        double eps, float* y, float* rstd) const {
  FsdpRMSNormForward(x, w, rows, n, eps, y, rstd);
}
void CpuBf16FsdpBackend::RMSNormAddForward(const float* x, const float* w, const float* residual,
                                           int64_t rows, int64_t n, double eps, float* y,
                                           float* rstd) const {
  FsdpRMSNormAddForward(x, w, residual, rows, n, eps, y, rstd);
}
void CpuBf16FsdpBackend::RMSNormBackward(const float* x, const float* w, const float* rstd,
                                         const float* dy, int64_t rows, int64_t n, float* dx,
                                         float* dw) const {
  FsdpRMSNormBackward(x, w, rstd, dy, rows, n, dx, dw);
}
void CpuBf16FsdpBackend::FillRopeTable(const RopeParams& params, int64_t max_positions,
                                       int64_t head_dim, float* cos, float* sin) const {
  TorchRopeTableEntries(params, max_positions, head_dim, cos, sin);
}
void CpuBf16FsdpBackend::RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T,
                                     int64_t heads, const int32_t* positions, float* y) const {
  FsdpRopeForward(table, x, B, T, heads, positions, y);
}
void CpuBf16FsdpBackend::RopeBackward(const RopeTable& table, const float* dy, int64_t B,
                                      int64_t T, int64_t heads, const int32_t* positions, float* dx) const {
  FsdpRopeBackward(table, dy, B, T, heads, positions, dx);
}
void CpuBf16FsdpBackend::AttentionForward(const AttentionShape& s, const float* q, const float* k,
                                          const float* v, float* out, float* lse) const {
  FsdpAttentionForward(s, q, k, v, out, lse);
}
void CpuBf16FsdpBackend::AttentionBackward(const AttentionShape& s, const float* q,
                                           const float* k, const float* v, const float* out,
                                           const float* lse, const float* dout, float* dq,
                                           float* dk, float* dv) const {
  FsdpAttentionBackward(s, q, k, v, out, lse, dout, dq, dk, dv);
}
void CpuBf16FsdpBackend::SwiGLUForward(const float* g, const float* u, int64_t n,
                                       float* s) const {
  FsdpSwiGLUForward(g, u, n, s);
}
void CpuBf16FsdpBackend::SwiGLUBackward(const float* g, const float* u, const float* ds,
                                        int64_t n, float* dg, float* du) const {
  FsdpSwiGLUBackward(g, u, ds, n, dg, du);
}
void CpuBf16FsdpBackend::EmbeddingForward(const float* table, const int32_t* tokens, int64_t N,
                                          int64_t D, float* out) const {
  FsdpEmbeddingForward(table, tokens, N, D, out);
}
void CpuBf16FsdpBackend::EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N,
                                           int64_t V, int64_t D, float* dtable) const {
  FsdpEmbeddingBackward(tokens, dout, N, V, D, dtable);
}
CrossEntropySums CpuBf16FsdpBackend::LmHeadLossForward(const float* x, const float* W,
                                                       const int32_t* labels, int64_t N,
                                                       int64_t D, int64_t V,
                                                       LmHeadWorkspace& ws) const {
  return FsdpLmHeadLossForward(x, W, labels, N, D, V, ws);
}
CrossEntropySums CpuBf16FsdpBackend::LmHeadLossForwardBackward(
    const float* x, const float* W, const int32_t* labels, int64_t N, int64_t D, int64_t V,
    double grad_scale, double z_mul, LmHeadWorkspace& ws, float* dx, float* dW) const {
  return FsdpLmHeadLossForwardBackward(x, W, labels, N, D, V, grad_scale, z_mul, ws, dx, dW);
}
void CpuBf16FsdpBackend::LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D,
                                      int64_t V, float* logits) const {
  FsdpLmHeadLogits(x, W, N, D, V, logits);
}

namespace {
const Backend& Bf16FsdpInstance() {
  static const CpuBf16FsdpBackend backend;
  return backend;
}
}  // namespace

REPLICA_REGISTER_BACKEND(cpu_bf16_fsdp, "cpu", Precision::kBf16Fsdp, Bf16FsdpInstance())

}  // namespace replica
