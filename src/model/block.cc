#include "model/block.h"

namespace replica {

void BlockForward(const Backend& ops, const BlockDims& d, const BlockSite& site,
                  const BlockActivations& a, float* out) {
  using enum LayerTensor;
  const int64_t N = d.N;
  // Attention, with QK-norm over the whole projection, then RoPE.
  site.Linear(kQProj, a.x, d.D, d.Qd, a.q_raw);
  site.Linear(kKProj, a.x, d.D, d.KVd, a.k_raw);
  site.Linear(kVProj, a.x, d.D, d.KVd, a.v);
  ops.RMSNormForward(a.q_raw, site.Norm(kQNorm), N, d.Qd, d.eps, a.q, a.rstd_q);
  ops.RMSNormForward(a.k_raw, site.Norm(kKNorm), N, d.KVd, d.eps, a.k, a.rstd_k);
  site.Rope(a.q, a.k);
  site.Attend(a.q, a.k, a.v, a.att, a.lse);
  site.Linear(kOProj, a.att, d.Qd, d.D, a.a);
  ops.RMSNormAddForward(a.a, site.Norm(kPostAttentionNorm), a.x, N, d.D, d.eps, a.h, a.rstd_a);
  // SwiGLU MLP.
  BlockMlp(ops, d, site, a);
  ops.RMSNormAddForward(a.m, site.Norm(kPostFeedforwardNorm), a.h, N, d.D, d.eps, out, a.rstd_m);
}

void BlockMlp(const Backend& ops, const BlockDims& d, const BlockSite& site,
              const BlockActivations& a) {
  using enum LayerTensor;
  site.Linear(kGateProj, a.h, d.D, d.I, a.g);
  site.Linear(kUpProj, a.h, d.D, d.I, a.u);
  ops.SwiGLUForward(a.g, a.u, d.N * d.I, a.s);
  site.Linear(kDownProj, a.s, d.I, d.D, a.m);
}

}  // namespace replica
