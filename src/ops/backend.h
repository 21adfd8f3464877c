// The ops table: every computation the model (model/olmo3.h) and the training step (train/,
// optim/, parallel/, checkpoint/) perform on tensor data goes through one Backend, so a second
// implementation plugs in below them without touching their logic (docs/design.md §8, "Adding a
// backend"). Implementations live in folders below ops/ and register themselves by device and
// precision (ops/registry.h); callers get one from SelectBackend and pass it explicitly. The fp32
// CPU implementation (ops/cpu/cpu_backend.h) is the first and the reference; its class is the one
// to derive from when a backend replaces only some ops (e.g. the matmul-bearing ones).
//
// Contract for every op (details and formulas in the ops/cpu/*.h header named at each op):
//  - Pointers address fp32 storage the backend can read and write (host memory for the CPU
//    backend); shapes are row-major, given in the comment of each op; sizes are element counts.
//  - "writes" overwrites the output; "accumulates" adds into it (+=), so the caller zeroes
//    gradient scratch first. Outputs do not alias inputs unless the op says so.
//  - Determinism: an op's results depend only on its inputs and shapes — never on the thread
//    count, scheduling or the address of a buffer — so a run is bit-reproducible on one machine.
//    Reductions that cross elements (norms, sums of squares, gradient sums) use a fixed order
//    stated per op; elementwise ops round each element the same way wherever it is computed.
//  - Ops are large (whole layers' tensors), so one virtual call per op costs nothing measurable.
// A Backend is stateless from the caller's point of view (const methods) and shared by reference.
// It allocates the memory its ops work on (Allocate: the model's activation arena, parameter and
// gradient stores, optimizer state, the LM head's workspace, the RoPE tables, inference
// activations and key/value caches); the caller owns what it was given.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ops/adamw_coefficients.h"
#include "ops/attention_shape.h"
#include "ops/device.h"
#include "ops/lm_head_workspace.h"  // CrossEntropySums, LmHeadWorkspace
#include "ops/precision.h"
#include "ops/rope_table.h"
#include "ops/step_scratch.h"
#include "ops/stored_matrix.h"
#include "tensor/buffer.h"
#include "tensor/flat_buffer.h"

namespace replica {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;  // "cpu-fp32", ...

  // ---- Capabilities (asked by callers instead of testing the backend's type) ---------------

  // What the matmul-bearing ops (linear, attention's products, the LM head) feed their operands
  // in. With kBf16 every use of a matmul weight rounds it to bf16 first, so such weights may be
  // stored or sent as bf16 without changing a result (parallel/zero3_store.h).
  virtual Precision matmul_precision() const = 0;
  // True when the pointers the ops take address host memory: collectives, checkpoints and I/O
  // read and write them in place; otherwise they copy through host buffers.
  virtual bool is_host() const = 0;
  // What the ops keep between calls for a training step of this shape (ops/step_scratch.h).
  virtual StepScratch StepScratchBytes(const StepShape&) const = 0;
  // The machine the ops run on (ops/device.h): the compute.isa cap, the settings a run records,
  // the MFU denominators.
  virtual const Device& device() const = 0;

  // ---- The weights' step bracket -------------------------------------------------------------

  // Opened by whoever drives an optimizer step (the trainer, `replica bench`) around the step's
  // forward and backward on the calling thread; closed when the returned object is destroyed.
  // Inside it the weights change only through AdamWUpdate and the writes reported to
  // NoteWeightsWritten, so a backend may keep copies derived from them for the step (the bf16
  // backends convert each matmul weight to bf16 once per step, ops/cpu/bf16_weights.h). Results
  // never depend on whether a bracket is open.
  class StepBracket {
   public:
    virtual ~StepBracket() = default;
  };
  virtual std::unique_ptr<StepBracket> BeginStep() const = 0;
  // [begin, begin + bytes) of weight memory was written by something other than this backend's
  // ops (a ZeRO-3 gather reusing a unit buffer): copies derived from it are stale.
  virtual void NoteWeightsWritten(const void* begin, size_t bytes) const = 0;
  // How many weight copies the backend has made in this process (the bf16 backends' bf16 copies;
  // `replica bench` reports them per step). 0 for a backend that keeps none.
  virtual int64_t WeightCopiesMade() const { return 0; }

  // ---- Memory ------------------------------------------------------------------------------

  // A zero-initialised buffer of `elements` elements of `dtype` in the memory this backend's ops
  // read and write (Buffer::location(); Location::kHost when is_host()).
  virtual Buffer Allocate(DType dtype, size_t elements) const = 0;
  // The fp32 case, as the flat buffers of parameters, gradients, optimizer state and activations.
  FlatBuffer AllocateFloats(size_t elements) const {
    return FlatBuffer(Allocate(DType::kF32, elements));
  }
  // Copies `bytes` bytes from host memory `src` into this backend's memory at `dst` (inside a
  // buffer from Allocate), and from this backend's memory `src` to host memory `dst`. Code that
  // fills or reads the backend's memory on the host (files, collectives, checkpoints, logits for
  // a caller) goes through these unless is_host().
  virtual void CopyFromHost(void* dst, const void* src, size_t bytes) const = 0;
  virtual void CopyToHost(void* dst, const void* src, size_t bytes) const = 0;

  // ---- Tables --------------------------------------------------------------------------------

  // rope_table.h. The entries of the cos/sin table its RopeForward / RopeBackward read, computed
  // on the host: cos and sin [max_positions, head_dim / 2]. MakeRopeTable(backend, ...) stores
  // them in memory from Allocate.
  virtual void FillRopeTable(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                             float* cos, float* sin) const = 0;

  // ---- Model ops (each with its backward) -------------------------------------------------

  // linear.h. x [N, in]; W [out, in]; y [N, out]. Writes y = x Wᵀ.
  virtual void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                             float* y) const = 0;
  // linear.h. Accumulates dx [N, in] += dy W (skipped when dx is null) and dW [out, in] += dyᵀ x.
  virtual void LinearBackward(const float* x, const float* W, const float* dy, int64_t N,
                              int64_t in, int64_t out, float* dx, float* dW) const = 0;

  // rmsnorm.h. x, y [rows, n]; w [n]; writes y and rstd [rows]. y may alias x.
  virtual void RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                              float* y, float* rstd) const = 0;
  // rmsnorm.h. Writes y = residual + RMSNorm(x) and rstd. y may alias residual, not x.
  virtual void RMSNormAddForward(const float* x, const float* w, const float* residual,
                                 int64_t rows, int64_t n, double eps, float* y,
                                 float* rstd) const = 0;
  // rmsnorm.h. Accumulates dx [rows, n] and dw [n]; dw summed over rows in row order.
  // dx must not alias x or dy.
  virtual void RMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                               int64_t rows, int64_t n, float* dx, float* dw) const = 0;

  // rope.h. x, y [B, T, heads, hd]; writes y. Row (b, t) is rotated by position t, or by
  // positions[b·T + t] when positions is not null. y may alias x.
  virtual void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T,
                           int64_t heads, const int32_t* positions, float* y) const = 0;
  // rope.h. Accumulates dx [B, T, heads, hd]. dx must not alias dy.
  virtual void RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T,
                            int64_t heads, const int32_t* positions, float* dx) const = 0;

  // attention.h. q, out [B, T, H, hd]; k, v [B, T, KV, hd]; writes out and lse [B, H, T].
  virtual void AttentionForward(const AttentionShape& s, const float* q, const float* k,
                                const float* v, float* out, float* lse) const = 0;
  // attention.h. Accumulates dq, dk, dv (shapes of q, k, v). No output aliases an input.
  virtual void AttentionBackward(const AttentionShape& s, const float* q, const float* k,
                                 const float* v, const float* out, const float* lse,
                                 const float* dout, float* dq, float* dk,
                                 float* dv) const = 0;

  // swiglu.h. g, u, s [n]; writes s = silu(g) ⊙ u. s may alias neither input.
  virtual void SwiGLUForward(const float* g, const float* u, int64_t n, float* s) const = 0;
  // swiglu.h. Accumulates dg, du [n].
  virtual void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n,
                              float* dg, float* du) const = 0;

  // embedding.h. table [V, D]; tokens [N] in [0, V) (checked by the caller); writes out [N, D].
  virtual void EmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                                float* out) const = 0;
  // embedding.h. Accumulates dtable [V, D]; a repeated token's rows are added in position order.
  virtual void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V,
                                 int64_t D, float* dtable) const = 0;

  // cross_entropy.h. The LM head fused with cross-entropy and z-loss: x [N, D]; W [V, D];
  // labels [N] in [0, V) or -100. Returns the loss sums (added in row order); no [N, V] logits.
  virtual CrossEntropySums LmHeadLossForward(const float* x, const float* W,
                                             const int32_t* labels, int64_t N, int64_t D,
                                             int64_t V, LmHeadWorkspace& ws) const = 0;
  // cross_entropy.h. The same, and accumulates dx [N, D] and dW [V, D] of
  // grad_scale · Σ (ce + z_mul · lse²).
  virtual CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W,
                                                     const int32_t* labels, int64_t N, int64_t D,
                                                     int64_t V, double grad_scale, double z_mul,
                                                     LmHeadWorkspace& ws, float* dx,
                                                     float* dW) const = 0;
  // Full logits for evaluation and parity: x [N, D]; W [V, D]; writes logits [N, V] = x Wᵀ.
  virtual void LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                            float* logits) const = 0;

  // ---- Inference over stored weights (evaluation and cached decoding) -------------------------
  // Weights are read in the dtype their file keeps (ops/stored_matrix.h); arithmetic is fp32.

  // embedding.h. out [N, D] = the rows tokens [N] of table [V, D] (F32, BF16 or F16), widened.
  virtual void EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens, int64_t N,
                                      float* out) const = 0;
  // matvec.h. y [W.rows] = W x for W stored as F32 or BF16 and x [W.cols]: one decoding step's
  // projection, summed in matvec.h's fixed order (not a GEMM's), so a step's bits do not depend
  // on the thread count or the SIMD width.
  virtual void MatVec(const StoredMatrix& W, const float* x, float* y) const = 0;
  // attention_decode.h. One position's attention against one layer's key/value cache
  // (DecodeAttentionShape): q [H, hd]; writes out [H, hd]; scores is scratch [H, capacity].
  virtual void AttentionDecode(const DecodeAttentionShape& s, const float* q,
                               const float* k_cache, const float* v_cache, float* out,
                               float* scores) const = 0;

  // ---- Buffer math (gradients, optimizer state, checkpoints, collectives) ---------------------
  // All elementwise: element i's result depends only on element i's inputs.

  // x[i] = 0 for i < n.
  virtual void Zero(float* x, int64_t n) const = 0;
  // dst[i] = src[i]. dst and src do not overlap.
  virtual void Copy(float* dst, const float* src, int64_t n) const = 0;
  // acc[i] = x[i] + acc[i] (the gradient-sum step; IEEE addition commutes, so the operand order
  // is for the reader). acc and x do not overlap.
  virtual void AddInto(float* acc, const float* x, int64_t n) const = 0;
  // dst[i] = src[i], then src[i] = 0 (moves a finished gradient sum out of the model's buffer in
  // one pass). dst and src do not overlap.
  virtual void MoveAndZero(float* dst, float* src, int64_t n) const = 0;
  // x[i] = fp32(double(x[i]) · factor).
  virtual void Scale(float* x, int64_t n, double factor) const = 0;
  // The fixed-order pieces of a gradient norm: partials[b] = Σ_{i in block b} double(x[i])²,
  // summed sequentially in index order within the block, for blocks of `block` elements
  // (b < ceil(n / block); the last may be short). The caller adds the partials in block order.
  virtual void SumSquaresPartials(const float* x, int64_t n, int64_t block,
                                  double* partials) const = 0;
  // adamw.h (ops). The AdamW update of n elements with one set of coefficients (one parameter
  // tensor, or the part of it in a ZeRO-1 shard): p, m, v updated in place from g; each element's
  // result depends only on its own p, g, m, v and the coefficients.
  virtual void AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                           const AdamWCoefficients& c) const = 0;
};

}  // namespace replica
