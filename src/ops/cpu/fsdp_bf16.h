// The ops as torch computes them on bf16 tensors under OLMo-core's FSDP mixed precision
// (param_dtype bfloat16, reduce_dtype float32; docs/precision.md "bf16-fsdp"): values live in fp32
// storage, and R(x), the round to the nearest bf16 (ties to even, bf16_round.h), is applied at
// every point where torch stores a bf16 tensor. Inputs are bf16 values already (the previous op
// rounded them) and every parameter is read as R(parameter), as FSDP casts its fp32 shards.
// Matmuls take bf16 operands and accumulate in fp32 (gemm_bf16.h); torch's own fp32 work inside
// an op (a norm's statistics, softmax sums) is fp32 here too, in another summation order, so a
// result can differ from torch's only where such an fp32 difference crosses a bf16 rounding
// boundary.
//
// Accumulation. A backward op "accumulates" its gradients as the Backend contract says, with
// torch's rounding: into an activation gradient (dx) as torch's autograd adds a second gradient
// to a bf16 tensor, dx = R(dx + R(new)); into a parameter gradient (dW) as OLMo-core accumulates
// micro-batches in fp32 (accumulate_grads_in_fp32), dW = dW + R(new), where R(new) is the bf16
// gradient of the parameter for this call.
//
// Every op is deterministic: results do not depend on the thread count.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ops/attention_shape.h"
#include "ops/lm_head_workspace.h"
#include "ops/rope_table.h"

namespace replica {

// y = R(x R(W)ᵀ).
void FsdpLinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                       float* y);
// dx = R(dx + R(dy R(W))) (skipped when dx is null); dW += R(dyᵀ x).
void FsdpLinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                        int64_t out, float* dx, float* dW);

// OLMo-core's RMSNorm on a bf16 input, computed in fp32 and cast back:
//   rstd = 1/sqrt(fp32 mean x² + eps);  y = R(R(w) · (x · rstd)).   y may alias x.
void FsdpRMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                        float* y, float* rstd);
// The block's residual add after it: y = R(residual + R(R(w) · (x · rstd))). y may alias
// residual, not x.
void FsdpRMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                           int64_t n, double eps, float* y, float* rstd);
// The autograd of the forward's fp32 ops, with dy a bf16 tensor:
//   dx = R(dx + R(rstd · R(w) dy − rstd³/n · x · Σ_k R(w_k) dy_k x_k)),
//   dw += R(Σ_r dy · x · rstd).
void FsdpRMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                         int64_t rows, int64_t n, float* dx, float* dw);

// The RoPE table as OLMo-core's RotaryEmbedding builds it, all in fp32: inv_freq[j] =
// 1 / theta^(2j / hd) (TorchRopeInvFreq; for YaRN, YaRNRoPEScalingConfig's blend of it and
// inv_freq / factor over the correction range, computed in fp32 as torch does), angle =
// t · inv_freq[j], then cos and sin of the fp32 angle (for YaRN times the fp32 attention factor).
// The angles and inverse frequencies are OLMo-core's bit for bit; cos and sin are glibc's, which
// differ from torch's CPU ones (MKL VML) by one ulp in a few percent of the entries. A YaRN
// without truncation (transformers' `truncate: false`, which OLMo-core cannot express) is
// RopeTableEntries'.
std::vector<float> TorchRopeInvFreq(const RopeParams& params, int64_t head_dim);
void TorchRopeTableEntries(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                           float* cos, float* sin);
// RoPE in fp32 on the bf16 input, cast back: y = R(rope(x)); dx = R(dx + R(ropeᵀ(dy))).
void FsdpRopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                     const int32_t* positions,
                     float* y);
void FsdpRopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T,
                      int64_t heads, const int32_t* positions, float* dx);

// w2(silu(w1 x) ⊙ w3 x) as torch evaluates it on bf16 tensors: a = R(silu(g)), s = R(a ⊙ u).
void FsdpSwiGLUForward(const float* g, const float* u, int64_t n, float* s);
// The mul's backward, then silu's: da = R(ds ⊙ u), du = R(du + R(ds ⊙ a)),
// dg = R(dg + R(da · σ(g)(1 + g(1 − σ(g))))).
void FsdpSwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                        float* du);

// out[i] = R(table[tokens[i]]).
void FsdpEmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                          float* out);
// The bf16 table gradient, each position's row added into its token's row in position order with
// every sum rounded (torch's index_add on a bf16 tensor), then added to dtable in fp32.
void FsdpEmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V,
                           int64_t D, float* dtable);

// Which of ATen's CPU code paths torch's attention kernel takes, which decides its fp32 orders.
// torch hands a bf16 GEMM to oneDNN only where the CPU has AVX-512 BW, VL and DQ (ATen's
// mkldnn_bf16_device_check); elsewhere its own reference loops (CPUBlas.cpp) compute it, and its
// fp32 vectors are 8 lanes (AVX2) rather than 16.
enum class TorchCpuPath {
  // CPUs without AVX-512 (torch's AVX2 kernels; checked bit for bit against torch's own op on
  // an AVX2 CPU, tests/ops/torch_sdpa_test.cc). Forward: the fast exp over whole 8-key chunks
  // of a key block, std::exp over the rest; the row sum as BlockRowSum says. Backward: the
  // scores Σ_d q·(k·scale) in fused multiply-adds; δ's products in 16-lane bf16 vectors;
  // dq = R(dq + scale · Σ dS k) with the sum in ATen's four interleaved partial sums; dk and dv
  // accumulate into the fp32 value of the bf16 gradient, query by query in order (dk's terms
  // q · (dS · scale) fused), rounded once per key block.
  kReference,
  // AVX-512 CPUs (oneDNN's bf16 GEMMs; measured against OLMo-core's per-op inputs on an
  // AVX512-BF16 CPU, docs/bf16-fsdp-spec.md, not checked here): the fast exp over every key;
  // the scores (q·k) · scale; dq, dk, dv each R(old + product) with the product summed in the
  // pair order (pair_order_sum.h); δ's products in 32-lane bf16 vectors.
  kOneDnn,
};
// The path torch takes on this CPU (DetectCpu()'s AVX-512, not a run's ISA cap: torch reads the
// CPU itself).
TorchCpuPath TorchCpuPathOnThisCpu();
// The path the ops follow: the one set for the process (compute.torch_cpu: the CPU kind the
// reference run was made on), else this CPU's.
TorchCpuPath TorchCpuPathInUse();
void SetTorchCpuPath(TorchCpuPath path);
// "auto" (this CPU's), "avx2" (kReference) or "avx512" (kOneDnn); an Error naming `what` else.
TorchCpuPath ResolveTorchCpuPath(const std::string& text, const std::string& what);
const char* TorchCpuPathName(TorchCpuPath path);  // "avx2" | "avx512"

// torch's CPU scaled_dot_product_attention (its flash kernel) on bf16 q, k, v, with OLMo-core's
// GQA by repeating k and v per query head. Per query row, keys are taken in blocks of
// kFsdpAttentionKeyBlock starting at key 0: scores s = (q·k) · scale in fp32, the running max m
// updated per block, P = exp(s − m) rounded to bf16 for the P·v product while the running sum
// adds the unrounded P; out = R(Σ R(P) v / Σ P) and lse = m + log Σ P in fp32.
constexpr int64_t kFsdpAttentionKeyBlock = 512;
void FsdpAttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                          float* out, float* lse, TorchCpuPath path = TorchCpuPathInUse());

// Its backward from the saved lse: P = exp(s − lse) (SLEEF's expf, torch.exp's), δ = Σ dO·out
// per row (the bf16 vector reduction of `path`), dS = P (dO·v − δ); per query head
// dq_h = Σ R(dS) k · scale, dk_h = Σ R(dS) q · scale, dv_h = Σ R(P) dO in fp32 as `path`
// orders and rounds them, each a bf16 value; the kv heads' gradients are the fp32 sums of their
// query heads' rounded ones, rounded (the backward of the repeat). Accumulates into dq, dk, dv as
// above.
void FsdpAttentionBackward(const AttentionShape& s, const float* q, const float* k,
                           const float* v, const float* out, const float* lse, const float* dout,
                           float* dq, float* dk, float* dv,
                           TorchCpuPath path = TorchCpuPathInUse());

// The LM head and OLMo-core's loss on bf16 logits: logits = R(x R(W)ᵀ), then in fp32 (the loss
// upcasts) CE and z-loss per row from the rounded logits; the sums are added in row order in
// double.
CrossEntropySums FsdpLmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                       int64_t N, int64_t D, int64_t V, LmHeadWorkspace& ws);
// The same and its backward: dlogits = R(grad_scale · (softmax · (1 + 2 z_mul lse) − onehot))
// (the fp32 gradient cast back to the logits' bf16), dx = R(dx + R(dlogits R(W))),
// dW += R(dlogitsᵀ x) over all rows.
CrossEntropySums FsdpLmHeadLossForwardBackward(const float* x, const float* W,
                                               const int32_t* labels, int64_t N, int64_t D,
                                               int64_t V, double grad_scale, double z_mul,
                                               LmHeadWorkspace& ws, float* dx, float* dW);
// logits = R(x R(W)ᵀ).
void FsdpLmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                      float* logits);

// The buffers these ops keep on the calling thread, in bytes, each grown to its largest call (the
// sizes for a step: step_scratch.cc): a = activation-gradient products (and RoPE's), b = weight
// gradients, c = the LM head's per-chunk weight gradient, w = a rounded norm gain, m = a rounded
// matmul weight, z = the LM head's per-row lse² terms of the z-loss sum.
struct FsdpScratch {
  uint64_t a = 0, b = 0, c = 0, w = 0, m = 0, z = 0;
  uint64_t bytes() const { return a + b + c + w + m + z; }
};
FsdpScratch FsdpScratchHeld();

}  // namespace replica
