// A backend whose memory the host cannot touch: device "sealed", fp32. Every buffer it allocates
// is its own mapping (Location::kDevice) that stays PROT_NONE except while one of its ops or its
// CopyFromHost / CopyToHost runs, so host code that reads or writes a backend's memory in place —
// instead of asking is_host() and copying — faults at the access, and the fault handler names the
// buffer and prints the stack. Its ops forward to the fp32 CPU backend (reached through the
// registry), so a run on it has the CPU's bits. Registered from sealed_backend_test.cc and
// selected by `compute.device: sealed`.
//
// Memory is opened for the whole process while any thread is inside an op (a count, not a flag),
// so ranks that run as threads never fault each other's legitimate accesses; a host access that
// races another rank's op goes unseen, one with no op in flight anywhere always faults.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/backend.h"

namespace replica::stub {

class SealedBackend final : public Backend {
 public:
  const char* name() const override { return "sealed"; }
  Precision matmul_precision() const override { return Precision::kFp32; }
  bool is_host() const override { return false; }
  const Device& device() const override;  // the CPU's: its ops run there
  Buffer Allocate(DType dtype, size_t elements) const override;
  void CopyFromHost(void* dst, const void* src, size_t bytes) const override;
  void CopyToHost(void* dst, const void* src, size_t bytes) const override;
  StepScratch StepScratchBytes(const StepShape& s) const override;
  // The CPU backend's (fp32: the bracket keeps nothing; the note reads no memory).
  std::unique_ptr<StepBracket> BeginStep() const override;
  void NoteWeightsWritten(const void* begin, size_t bytes) const override;
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
  void RopeForward(const RopeTable& t, const float* x, int64_t B, int64_t T, int64_t heads,
                   const int32_t* positions, float* y) const override;
  void RopeBackward(const RopeTable& t, const float* dy, int64_t B, int64_t T, int64_t heads,
                    const int32_t* positions, float* dx) const override;
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
  void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V,
                         int64_t D, float* dtable) const override;
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

  // Strict: every tensor pointer an op or a copy is given must be memory from Allocate (Error
  // naming the op otherwise), so host buffers handed to the ops are found too. Off for the
  // op-by-op comparison, which feeds host arrays.
  static void SetStrict(bool strict);
  // Bytes allocated and not yet released, and the number of accesses copied in and out.
  static size_t LiveBytes();
  static int64_t Copies();
};

// The one instance (registered as "sealed", fp32).
SealedBackend& Sealed();

}  // namespace replica::stub
