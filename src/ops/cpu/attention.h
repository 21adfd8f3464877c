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
// Visibility: key j is visible to query i iff j <= i and (window == 0 or i - window < j).
#pragma once
#include <cstdint>

namespace replica {

struct AttentionShape {
  int64_t B, T, H, KV, hd;
  int64_t window;  // 0 = full causal
};

// out = softmax(q k^T * scale + mask) v ;  lse saved.
void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* out, float* lse);
// Backward of the line above. Accumulates (+=) into dq, dk, dv.
void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* out, const float* lse, const float* dout, float* dq, float* dk,
                       float* dv);

// Plain scalar references (materialise each row's scores; for tests only).
void AttentionForwardReference(const AttentionShape& s, const float* q, const float* k,
                               const float* v, float* out, float* lse);
void AttentionBackwardReference(const AttentionShape& s, const float* q, const float* k,
                                const float* v, const float* out, const float* lse,
                                const float* dout, float* dq, float* dk, float* dv);

}  // namespace replica
