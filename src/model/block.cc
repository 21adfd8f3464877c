#include "model/block.h"

#include <algorithm>

namespace replica {

void BlockForward(const Backend& ops, const BlockDims& d, const BlockSite& site,
                  const BlockActivations& a, float* out) {
  using enum LayerTensor;
  const int64_t N = d.N;
  // Attention, with QK-norm over the whole projection, then RoPE.
  site.Linear(kQProj, a.x, N, d.D, d.Qd, a.q_raw);
  site.Linear(kKProj, a.x, N, d.D, d.KVd, a.k_raw);
  site.Linear(kVProj, a.x, N, d.D, d.KVd, a.v);
  ops.RMSNormForward(a.q_raw, site.Norm(kQNorm), N, d.Qd, d.eps, a.q, a.rstd_q);
  ops.RMSNormForward(a.k_raw, site.Norm(kKNorm), N, d.KVd, d.eps, a.k, a.rstd_k);
  site.Rope(a.q, a.k);
  site.Attend(a.q, a.k, a.v, a.att, a.lse);
  site.Linear(kOProj, a.att, N, d.Qd, d.D, a.a);
  ops.RMSNormAddForward(a.a, site.Norm(kPostAttentionNorm), a.x, N, d.D, d.eps, a.h, a.rstd_a);
  // SwiGLU MLP, in passes of d.mlp_rows rows when set.
  const int64_t pass = d.mlp_rows > 0 ? std::min(d.mlp_rows, N) : N;
  for (int64_t r = 0; r < N; r += pass) {
    BlockDims dr = d;
    dr.N = std::min(pass, N - r);
    BlockActivations ar = a;
    ar.h = a.h + r * d.D;
    BlockMlp(ops, dr, site, ar);
    ops.RMSNormAddForward(a.m, site.Norm(kPostFeedforwardNorm), ar.h, dr.N, d.D, d.eps,
                          out + r * d.D, a.rstd_m + r);
  }
}

void BlockMlp(const Backend& ops, const BlockDims& d, const BlockSite& site,
              const BlockActivations& a) {
  using enum LayerTensor;
  site.Linear(kGateProj, a.h, d.N, d.D, d.I, a.g);
  site.Linear(kUpProj, a.h, d.N, d.D, d.I, a.u);
  ops.SwiGLUForward(a.g, a.u, d.N * d.I, a.s);
  site.Linear(kDownProj, a.s, d.N, d.I, d.D, a.m);
}

}  // namespace replica
