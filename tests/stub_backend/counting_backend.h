// A third backend, whole in this folder: device "counting", fp32. Every op counts its call and
// forwards to the fp32 CPU backend, which it reaches only through the registry. It is registered
// from counting_backend_test.cc (REPLICA_REGISTER_BACKEND) and selected by `compute.device:
// counting`; nothing outside this folder and ops/registry names it.
#pragma once
#include <atomic>
#include <cstdint>

#include "ops/backend.h"
#include "ops/registry.h"

namespace replica::stub {

class CountingBackend final : public Backend {
 public:
  const char* name() const override { return "counting"; }
  Precision matmul_precision() const override { return Precision::kFp32; }
  bool is_host() const override { return true; }
  const Device& device() const override { return Cpu().device(); }  // runs on the CPU
  Buffer Allocate(DType dtype, size_t elements) const override {
    allocated_bytes_ += static_cast<int64_t>(elements * DTypeSize(dtype));
    return Cpu().Allocate(dtype, elements);
  }
  void CopyFromHost(void* dst, const void* src, size_t bytes) const override {
    Cpu().CopyFromHost(dst, src, bytes);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) const override {
    Cpu().CopyToHost(dst, src, bytes);
  }
  StepScratch StepScratchBytes(const StepShape& s) const override {
    return Cpu().StepScratchBytes(s);
  }
  std::unique_ptr<StepBracket> BeginStep() const override { return Cpu().BeginStep(); }
  void NoteWeightsWritten(const void* begin, size_t bytes) const override {
    Cpu().NoteWeightsWritten(begin, bytes);
  }
  void FillRopeTable(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                     float* cos, float* sin) const override {
    Cpu().FillRopeTable(params, max_positions, head_dim, cos, sin);
  }

  int64_t calls() const { return calls_.load(); }
  int64_t allocated_bytes() const { return allocated_bytes_.load(); }
  int64_t matmul_calls() const { return matmul_calls_.load(); }

  void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                     float* y) const override {
    Matmul().LinearForward(x, W, N, in, out, y);
  }
  void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                      int64_t out, float* dx, float* dW) const override {
    Matmul().LinearBackward(x, W, dy, N, in, out, dx, dW);
  }
  void RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                      float* y, float* rstd) const override {
    Cpu().RMSNormForward(x, w, rows, n, eps, y, rstd);
  }
  void RMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                         int64_t n, double eps, float* y, float* rstd) const override {
    Cpu().RMSNormAddForward(x, w, residual, rows, n, eps, y, rstd);
  }
  void RMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                       int64_t rows, int64_t n, float* dx, float* dw) const override {
    Cpu().RMSNormBackward(x, w, rstd, dy, rows, n, dx, dw);
  }
  void RopeForward(const RopeTable& t, const float* x, int64_t B, int64_t T, int64_t heads,
                   const int32_t* positions,
                   float* y) const override {
    Cpu().RopeForward(t, x, B, T, heads, positions, y);
  }
  void RopeBackward(const RopeTable& t, const float* dy, int64_t B, int64_t T, int64_t heads,
                    const int32_t* positions,
                    float* dx) const override {
    Cpu().RopeBackward(t, dy, B, T, heads, positions, dx);
  }
  void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        float* out, float* lse) const override {
    Matmul().AttentionForward(s, q, k, v, out, lse);
  }
  void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                         const float* out, const float* lse, const float* dout, float* dq,
                         float* dk, float* dv) const override {
    Matmul().AttentionBackward(s, q, k, v, out, lse, dout, dq, dk, dv);
  }
  void SwiGLUForward(const float* g, const float* u, int64_t n, float* s) const override {
    Cpu().SwiGLUForward(g, u, n, s);
  }
  void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                      float* du) const override {
    Cpu().SwiGLUBackward(g, u, ds, n, dg, du);
  }
  void EmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                        float* out) const override {
    Cpu().EmbeddingForward(table, tokens, N, D, out);
  }
  void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V, int64_t D,
                         float* dtable) const override {
    Cpu().EmbeddingBackward(tokens, dout, N, V, D, dtable);
  }
  CrossEntropySums LmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                     int64_t N, int64_t D, int64_t V,
                                     LmHeadWorkspace& ws) const override {
    return Matmul().LmHeadLossForward(x, W, labels, N, D, V, ws);
  }
  CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W,
                                             const int32_t* labels, int64_t N, int64_t D,
                                             int64_t V, double grad_scale, double z_mul,
                                             LmHeadWorkspace& ws, float* dx,
                                             float* dW) const override {
    return Matmul().LmHeadLossForwardBackward(x, W, labels, N, D, V, grad_scale, z_mul, ws, dx,
                                              dW);
  }
  void LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                    float* logits) const override {
    Matmul().LmHeadLogits(x, W, N, D, V, logits);
  }
  void EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens, int64_t N,
                              float* out) const override {
    Cpu().EmbeddingForwardStored(table, tokens, N, out);
  }
  void MatVec(const StoredMatrix& W, const float* x, float* y) const override {
    Matmul().MatVec(W, x, y);
  }
  void AttentionDecode(const DecodeAttentionShape& s, const float* q, const float* k_cache,
                       const float* v_cache, float* out, float* scores) const override {
    Matmul().AttentionDecode(s, q, k_cache, v_cache, out, scores);
  }
  void Zero(float* x, int64_t n) const override { Cpu().Zero(x, n); }
  void Copy(float* dst, const float* src, int64_t n) const override { Cpu().Copy(dst, src, n); }
  void AddInto(float* acc, const float* x, int64_t n) const override { Cpu().AddInto(acc, x, n); }
  void MoveAndZero(float* dst, float* src, int64_t n) const override {
    Cpu().MoveAndZero(dst, src, n);
  }
  void Scale(float* x, int64_t n, double factor) const override { Cpu().Scale(x, n, factor); }
  void SumSquaresPartials(const float* x, int64_t n, int64_t block,
                          double* partials) const override {
    Cpu().SumSquaresPartials(x, n, block, partials);
  }
  void AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamWCoefficients& c) const override {
    Cpu().AdamWUpdate(p, g, m, v, n, c);
  }

 private:
  const Backend& Cpu() const {
    calls_.fetch_add(1);
    return SelectBackend("cpu", Precision::kFp32);
  }
  const Backend& Matmul() const {
    matmul_calls_.fetch_add(1);
    return Cpu();
  }
  mutable std::atomic<int64_t> calls_{0}, matmul_calls_{0};
  mutable std::atomic<int64_t> allocated_bytes_{0};
};

// The one instance (registered as "counting", fp32).
inline CountingBackend& Counting() {
  static CountingBackend backend;
  return backend;
}

}  // namespace replica::stub
