// The LM head fused with cross-entropy and z-loss (docs/design.md §2.4, §6). Rows (tokens) are processed
// in chunks: one sgemm makes the logits of a chunk of rows over the whole vocabulary, each row's
// log-sum-exp and loss are computed from that buffer, which is left holding exp(logit - row max);
// two sgemms push it into dX and dW, with the per-row softmax factor and the label's one-hot term
// applied on the small [rows, D] side so the [rows, V] buffer is passed over only once more. The [N, V] logits of a whole batch never exist; the
// scratch is chunk_rows × V. Keeping whole rows in one chunk (rather than vocabulary tiles with an
// online log-sum-exp) means backward never recomputes logits: the LM head costs exactly 3 GEMMs.
// Per-row work is owned by one thread, the chunk sums are added in row order in double, and the
// chunk size does not depend on the thread count, so results are bit-identical for any of them.
//
// With Precision::kBf16 the three GEMMs take bf16-rounded operands with fp32 accumulation (the
// logits GEMM: x and W; the backward: the exp buffer, W and coef·x; the label terms round W[y] and
// x likewise); log-sum-exp, softmax statistics, CE and z-loss stay fp32/double as in fp32 mode.
// dx and dW must not alias x, W or each other (with a tied head W and the embedding gradient are
// different buffers: parameters and gradients).
#pragma once
#include <array>
#include <cstdint>

#include "ops/cpu/gemm_bf16.h"
#include "ops/lm_head_workspace.h"
#include "ops/precision.h"

namespace replica {

// x [N, D] (the final-normed hidden states); W [V, D] (lm_head, or the tied embedding);
// labels [N] in [0, V) or -100. Returns the sums; no gradient.
CrossEntropySums LmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                   int64_t N, int64_t D, int64_t V, LmHeadWorkspace& ws,
                                   Precision precision = Precision::kFp32);

// Forward and backward of
//   loss = grad_scale · Σ_{rows, label != -100} ( lse - logit[label] + z_mul · lse² ),
//   logits = x W^T,  lse = log Σ_v exp(logits[v])
// accumulating (+=) dx [N, D] and dW [V, D]:
//   dlogit[v] = grad_scale · ( softmax[v] · (1 + 2 z_mul lse) - [v == label] )
//   dx += dlogits W ;  dW += dlogits^T x
CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W, const int32_t* labels,
                                           int64_t N, int64_t D, int64_t V, double grad_scale,
                                           double z_mul, LmHeadWorkspace& ws, float* dx,
                                           float* dW, Precision precision = Precision::kFp32);

// The GEMMs one chunk of `rows` rows runs, as it calls them: the logits x Wᵀ, then the backward's
// (e' W) and e'ᵀ (coef ⊙ x) (the weight is operand B of the first two).
std::array<GemmShape, 3> LmHeadChunkGemms(int64_t rows, int64_t D, int64_t V);

// Plain reference: materialises all logits and computes everything in double (tests only).
// dx and dW may be null (forward only). With kBf16, x and W are rounded to bf16 before the logits
// and the gradient products, and each row's dlogits are rounded to bf16 before its products.
CrossEntropySums LmHeadLossReference(const float* x, const float* W, const int32_t* labels,
                                     int64_t N, int64_t D, int64_t V, double grad_scale,
                                     double z_mul, float* dx, float* dW,
                                     Precision precision = Precision::kFp32);

}  // namespace replica
