// The fp32 CPU backend: the ops table (ops/backend.h) implemented by the ops of this folder, each
// op exactly the free function of the same name (so its header's shapes, formulas and
// determinism hold), and the buffer math as OpenMP loops over fixed blocks. CpuBackend() returns
// the one instance. The matmul-bearing ops (linear forward/backward, attention forward/backward,
// the LM head) pass the ops the precision their operands are fed in: fp32 here; a derived backend
// (CpuBf16Backend) only names another precision through the protected constructor, so every op
// is declared and defined once.
//
// Threads: every loop splits its work into pieces whose size depends only on the problem size,
// and each output element is computed by one thread in a fixed order, so results are
// bit-identical for any OMP_NUM_THREADS. Loops too small to pay for a thread team (fewer than
// kMinParallelWork elements, or one block) run on the calling thread, which also keeps small
// models free of OpenMP teams in fork()ed processes.
#pragma once
#include "ops/backend.h"
#include "ops/precision.h"

namespace replica {

class CpuFp32Backend : public Backend {
 public:
  CpuFp32Backend() = default;
  const char* name() const override { return "cpu-fp32"; }
  Precision matmul_precision() const override { return matmul_; }
  const Device& device() const override;  // CpuDevice()
  bool is_host() const override { return true; }
  StepScratch StepScratchBytes(const StepShape& s) const override;  // step_scratch.cc
  // With bf16 matmuls the bracket is a Bf16WeightScope (bf16_weights.h); with fp32 it keeps
  // nothing.
  std::unique_ptr<StepBracket> BeginStep() const override;
  void NoteWeightsWritten(const void* begin, size_t bytes) const override;
  Buffer Allocate(DType dtype, size_t elements) const override {
    return Buffer(dtype, elements, Location::kHost);
  }
  void CopyFromHost(void* dst, const void* src, size_t bytes) const override;
  void CopyToHost(void* dst, const void* src, size_t bytes) const override;
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
  void EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens, int64_t N,
                              float* out) const override;
  void MatVec(const StoredMatrix& W, const float* x, float* y) const override;
  void AttentionDecode(const DecodeAttentionShape& s, const float* q, const float* k_cache,
                       const float* v_cache, float* out, float* scores) const override;

  void Zero(float* x, int64_t n) const override;
  void Copy(float* dst, const float* src, int64_t n) const override;
  void AddInto(float* acc, const float* x, int64_t n) const override;
  void MoveAndZero(float* dst, float* src, int64_t n) const override;
  void Scale(float* x, int64_t n, double factor) const override;
  void SumSquaresPartials(const float* x, int64_t n, int64_t block,
                          double* partials) const override;
  void AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamWCoefficients& c) const override;

 protected:
  // The precision the matmul-bearing ops feed their operands in (accumulating in fp32).
  explicit CpuFp32Backend(Precision matmul) : matmul_(matmul) {}

 private:
  const Precision matmul_ = Precision::kFp32;
};

// The one fp32 CPU backend (registered as device "cpu", precision fp32; ops/registry.h). The
// reference every other backend is tested against.
const Backend& CpuBackend();

}  // namespace replica
