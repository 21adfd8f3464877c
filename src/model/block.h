// One Olmo 3 decoder block, written once:
//   q, k, v = x W_qᵀ, x W_kᵀ, x W_vᵀ
//   q, k    = RoPE(RMSNorm(q)), RoPE(RMSNorm(k))        QK-norm over the whole projection
//   h       = x + RMSNorm(Attention(q, k, v) W_oᵀ)
//   out     = h + RMSNorm((silu(h W_gateᵀ) ⊙ h W_upᵀ) W_downᵀ)
// Training (model/olmo3.cc), evaluation over stored weights (infer/inference_model.cc) and cached
// decoding (infer/decoder.cc) run this same list of op calls on their Backend. What differs between
// them is a BlockSite: where the layer's weights are and in what element type (a projection is
// Backend::LinearForward on fp32 weights, or Backend::MatVec on a decode step's stored ones), which
// position each row has (RoPE per row, per document, or at the decode position), and which keys a
// query sees (its own sequence, its document, or a key/value cache).
#pragma once
#include <cstdint>

#include "model/layer_tensors.h"
#include "ops/backend.h"

namespace replica {

// The values one block computes for N rows, each [N, width] row-major (N = 1 when decoding).
// Buffers may be shared where a caller keeps none of them (e.g. one rstd for every norm, or q_raw
// and q: the norms may write in place). With BlockDims::mlp_rows set, g, u, s and m hold one pass
// of that many rows.
struct BlockActivations {
  float* x;       // [N, D]      the block's input (residual stream)
  float* q_raw;   // [N, H*hd]   x q_projᵀ
  float* k_raw;   // [N, KV*hd]  x k_projᵀ
  float* v;       // [N, KV*hd]  x v_projᵀ
  float* q;       // [N, H*hd]   rope(RMSNorm(q_raw))
  float* k;       // [N, KV*hd]  rope(RMSNorm(k_raw))
  float* rstd_q;  // [N]
  float* rstd_k;  // [N]
  float* att;     // [N, H*hd]   attention output, heads concatenated
  float* lse;     // [B, H, T]   attention log-sum-exp (null where the site keeps none)
  float* a;       // [N, D]      att o_projᵀ
  float* rstd_a;  // [N]
  float* h;       // [N, D]      x + RMSNorm(a)
  float* g;       // [N, I]      h gate_projᵀ
  float* u;       // [N, I]      h up_projᵀ
  float* s;       // [N, I]      silu(g) ⊙ u
  float* m;       // [N, D]      s down_projᵀ
  float* rstd_m;  // [N]
};

// The widths of one block call.
struct BlockDims {
  int64_t N;         // rows
  int64_t D, I;      // hidden, MLP
  int64_t Qd, KVd;   // H*hd, KV*hd
  double eps;        // RMSNorm epsilon
  // Rows per MLP pass: 0 = all N in one pass. The MLP and the residual add after it are row-wise,
  // so a caller that keeps no MLP activations (evaluation at long context) runs them in passes of
  // this many rows and holds g, u, s, m for one pass only.
  int64_t mlp_rows = 0;
};

// Where one layer's block runs: its weights, its rows' positions and the keys they see.
class BlockSite {
 public:
  virtual ~BlockSite() = default;
  // y [rows, out] = x [rows, in] Wᵀ for the layer's matmul weight t (model/layer_tensors.h).
  virtual void Linear(LayerTensor t, const float* x, int64_t rows, int64_t in, int64_t out,
                      float* y) const = 0;
  // The layer's norm weight t, fp32.
  virtual const float* Norm(LayerTensor t) const = 0;
  // RoPE in place on q [N, H*hd] and k [N, KV*hd], each row at its position.
  virtual void Rope(float* q, float* k) const = 0;
  // att [N, H*hd] from these rows' q, k, v (lse as AttentionForward writes it, where kept).
  virtual void Attend(const float* q, const float* k, const float* v, float* att,
                      float* lse) const = 0;
};

// The whole block: a.x -> every activation of `a`, and its output into out [N, D] (may be a.x's
// storage only when nothing else reads a.x afterwards).
void BlockForward(const Backend& ops, const BlockDims& d, const BlockSite& site,
                  const BlockActivations& a, float* out);
// The MLP's projections for d.N rows: a.h -> a.g, a.u, a.s, a.m (what a recompute policy re-runs).
void BlockMlp(const Backend& ops, const BlockDims& d, const BlockSite& site,
              const BlockActivations& a);

}  // namespace replica
