// Causal multi-head attention with per-layer sliding window and GQA/MQA, tiled with an online
// softmax (FlashAttention-2 style): no T×T matrix is materialised, tiles wholly outside the window
// are skipped, and backward recomputes probabilities from the saved log-sum-exp.
//
// Layouts (row-major, fp32):
//   q   [B, T, H,  hd]    (the q projection output after QK-norm and RoPE; head n at n*hd)
//   k,v [B, T, KV, hd]
//   out [B, T, H,  hd]
//   lse [B, H, T]         log-sum-exp of the scaled scores of each query row (saved for backward)
// Query head n uses kv head n / (H / KV). Scores are (q·k) * scale, scale = 1/sqrt(hd).
// Visibility: key j is visible to query i iff j <= i and (window == 0 or i - window < j), and,
// under intra-document masking (s.cu_doc_lens set; ops/document_mask.h), j is in i's document.
// Tiles with no visible pair are skipped, so a packed row costs about what its documents cost
// apart (CountAttentionTilePairs).
// Precision::kBf16: every operand of QKᵀ, PV and their backward products is rounded to bf16 with
// fp32 accumulation; softmax statistics and lse stay fp32 (docs/precision.md).
// Outputs (out, lse, dq, dk, dv) must not alias any input. Each output element is computed by one
// thread in a fixed tile order, so results are bit-identical for any thread count.
#pragma once
#include <cstdint>

#include "ops/attention_shape.h"
#include "ops/precision.h"

namespace replica {

// out = softmax(q k^T * scale + mask) v ;  lse saved.
void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* out, float* lse, Precision precision = Precision::kFp32);
// Backward of the line above. Accumulates (+=) into dq, dk, dv.
void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* out, const float* lse, const float* dout, float* dq, float* dk,
                       float* dv, Precision precision = Precision::kFp32);

// How the backward splits work over threads. kAuto (what AttentionBackward uses) picks by the
// thread count and the size of a (b, kv head) unit; all schemes give bit-identical results, which
// the tests check.
enum class AttentionBackwardScheme : int {
  kAuto = 0,
  kPerKvHead = 1,  // one unit per (b, kv head): owns its dk, dv and its query heads' dq
  kTwoPass = 2,    // dk/dv per (b, kv head, key tile), then dq per (b, head, query tile)
};
void AttentionBackwardWithScheme(const AttentionShape& s, const float* q, const float* k,
                                 const float* v, const float* out, const float* lse,
                                 const float* dout, float* dq, float* dk, float* dv,
                                 AttentionBackwardScheme scheme,
                                 Precision precision = Precision::kFp32);

// Plain scalar references (materialise each row's scores; for tests only). They accumulate in
// double and round once on store; the fast path agrees with them to ~1e-5 relative. With kBf16,
// q, k, v are rounded to bf16 and so is exp(score − row max) before P·v (the fast path rounds
// exp(score − running max), so the two agree to bf16 resolution, not to fp32).
void AttentionForwardReference(const AttentionShape& s, const float* q, const float* k,
                               const float* v, float* out, float* lse,
                               Precision precision = Precision::kFp32);
void AttentionBackwardReference(const AttentionShape& s, const float* q, const float* k,
                                const float* v, const float* out, const float* lse,
                                const float* dout, float* dq, float* dk, float* dv);
// The same references on double storage, for finite-difference gradient checks.
void AttentionForwardReference(const AttentionShape& s, const double* q, const double* k,
                               const double* v, double* out, double* lse);
void AttentionBackwardReference(const AttentionShape& s, const double* q, const double* k,
                                const double* v, const double* out, const double* lse,
                                const double* dout, double* dq, double* dk, double* dv);

// Throws Error unless B, T, H, KV, hd >= 1, H is a multiple of KV and window >= 0.
void ValidateAttentionShape(const AttentionShape& s);
// Number of visible (query, key) pairs of one head over a sequence of T positions:
// Σ_i min(i+1, window) (window 0 = i+1). Forward FLOPs = 4·hd·pairs per head.
int64_t AttentionVisiblePairs(int64_t T, int64_t window);

// The 64 × 64 (query tile, key tile) products the fast path computes per call, summed over b and
// the heads: `forward` as the forward visits them (per query tile), `backward` as the backward's
// dk/dv pass does (per key tile). The two are equal; with documents they count only tiles that
// hold a visible pair, e.g. a T = 256 row of documents [0, 64), [64, 128), [128, 256) costs 5 of
// the causal 10.
struct AttentionTilePairs {
  int64_t forward = 0, backward = 0;
};
AttentionTilePairs CountAttentionTilePairs(const AttentionShape& s);

}  // namespace replica
