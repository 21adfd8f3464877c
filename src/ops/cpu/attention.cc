// Tiled attention (FlashAttention-2 scheme) on fp32, SIMD through Highway with run-time target
// dispatch. Work is split into 64-query × 64-key tiles; only tiles that intersect the visible band
// (causal, plus the sliding window) are touched, and only tiles cut by the band's edges are masked.
//
// Every tile product is a small GEMM in "broadcast" form: C[r, :] += A[r, k] · B[k, :], with B
// packed so its rows are contiguous. Each output element is then summed over k in order, one FMA
// at a time, so results do not depend on vector width within a target, nor on threads.
//
// Threads and determinism (DESIGN.md §2.3): forward work units are (b, head, query tile), each
// writing its own rows of out and lse. Backward either runs one unit per (b, kv head) that owns
// dk, dv of that kv head and dq of its query heads (used when these units balance over the
// threads), or two passes: dk/dv per (b, kv head, key tile), then dq per (b, head, query tile).
// Both schemes add the same per-tile partial sums in the same order (key tiles ascending for dq;
// query heads then query tiles ascending for dk/dv), so they give bit-identical results and the
// choice between them, which depends on the thread count, does not change any output.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cpu/attention.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// After foreach_target.h:
#include <hwy/aligned_allocator.h>
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/cpu/attention.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr size_t kBr = 64;    // queries per tile
constexpr size_t kBc = 64;    // keys per tile (a multiple of every target's lane count)
constexpr size_t kRows = 4;   // micro-kernel rows
constexpr size_t kHdAlign = 16;  // packed head dims are padded to this (>= any lane count)
// Vectors per micro-kernel row: 4 rows × kCols accumulators must fit the register file.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kCols = 4;  // 32 zmm registers
#else
constexpr size_t kCols = 2;  // 16 registers
#endif
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// C[r, 0:NV·N) (+)= Σ_k A(r, k) · B[k, 0:NV·N) for r < R, with A(r, k) = A[r·ars + k·acs].
template <size_t R, size_t NV, bool kAccumulate>
HWY_INLINE void MicroKernel(size_t K, const float* HWY_RESTRICT A, size_t ars, size_t acs,
                            const float* HWY_RESTRICT B, size_t ldb, float* HWY_RESTRICT C,
                            size_t ldc) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF c[R][NV];
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t v = 0; v < NV; ++v) {
      c[r][v] = kAccumulate ? hn::LoadU(d, C + r * ldc + v * N) : hn::Zero(d);
    }
  }
  for (size_t k = 0; k < K; ++k) {
    VF b[NV];
#pragma GCC unroll 8
    for (size_t v = 0; v < NV; ++v) b[v] = hn::LoadU(d, B + k * ldb + v * N);
#pragma GCC unroll 8
    for (size_t r = 0; r < R; ++r) {
      const VF a = hn::Set(d, A[r * ars + k * acs]);
#pragma GCC unroll 8
      for (size_t v = 0; v < NV; ++v) c[r][v] = hn::MulAdd(a, b[v], c[r][v]);
    }
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (size_t v = 0; v < NV; ++v) hn::StoreU(c[r][v], d, C + r * ldc + v * N);
  }
}

template <size_t R, bool kAccumulate>
HWY_INLINE void GemmRows(size_t ncols, size_t K, const float* A, size_t ars, size_t acs,
                         const float* B, size_t ldb, float* C, size_t ldc) {
  const size_t N = hn::Lanes(DF());
  size_t j = 0;
  for (; j + kCols * N <= ncols; j += kCols * N) {
    MicroKernel<R, kCols, kAccumulate>(K, A, ars, acs, B + j, ldb, C + j, ldc);
  }
  for (; j < ncols; j += N) MicroKernel<R, 1, kAccumulate>(K, A, ars, acs, B + j, ldb, C + j, ldc);
}

// C[M × ncols] (+)= A[M × K] · B[K × ncols]; ncols a multiple of the lane count.
template <bool kAccumulate>
void Gemm(size_t M, size_t ncols, size_t K, const float* A, size_t ars, size_t acs,
          const float* B, size_t ldb, float* C, size_t ldc) {
  size_t i = 0;
  for (; i + kRows <= M; i += kRows) {
    GemmRows<kRows, kAccumulate>(ncols, K, A + i * ars, ars, acs, B, ldb, C + i * ldc, ldc);
  }
  for (; i < M; ++i) GemmRows<1, kAccumulate>(ncols, K, A + i * ars, ars, acs, B, ldb, C + i * ldc, ldc);
}

// Per-thread scratch that grows and is reused across calls (no allocation in a steady step).
class Scratch {
 public:
  float* Get(size_t n) {
    if (n > size_) {
      mem_ = hwy::AllocateAligned<float>(n);
      size_ = n;
    }
    return mem_.get();
  }

 private:
  hwy::AlignedFreeUniquePtr<float[]> mem_;
  size_t size_ = 0;
};
thread_local Scratch tls_scratch;

struct Geometry {
  size_t B, T, H, KV, hd, hdp, W, group, nqt, nkt;
  float scale;

  explicit Geometry(const AttentionShape& s)
      : B(s.B), T(s.T), H(s.H), KV(s.KV), hd(s.hd),
        hdp((static_cast<size_t>(s.hd) + kHdAlign - 1) / kHdAlign * kHdAlign), W(s.window),
        group(s.H / s.KV), nqt((s.T + kBr - 1) / kBr), nkt((s.T + kBc - 1) / kBc),
        scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hd)))) {}

  size_t QRow(size_t b, size_t t, size_t h) const { return ((b * T + t) * H + h) * hd; }
  size_t KVRow(size_t b, size_t t, size_t g) const { return ((b * T + t) * KV + g) * hd; }
  size_t LseAt(size_t b, size_t h, size_t t) const { return (b * H + h) * T + t; }

  // Key tiles a query tile sees: [first, last].
  size_t FirstKeyTile(size_t qt) const {
    const size_t q0 = qt * kBr;
    return (W > 0 && q0 + 1 > W ? q0 + 1 - W : 0) / kBc;
  }
  size_t LastKeyTile(size_t qt) const { return (std::min(T, (qt + 1) * kBr) - 1) / kBc; }
  // Query tiles that see a key tile: [first, last].
  size_t FirstQueryTile(size_t kt) const { return kt * kBc / kBr; }
  size_t LastQueryTile(size_t kt) const {
    const size_t k1 = std::min(T, (kt + 1) * kBc);  // one past the tile's last key
    const size_t last_query = W > 0 ? std::min(T - 1, k1 - 1 + W - 1) : T - 1;
    return last_query / kBr;
  }
};

// Sets to -inf the scores of S[qn × kBc] (query rows from q0, keys from k0) that are not visible,
// unless the whole tile is visible.
void MaskTile(const Geometry& g, size_t q0, size_t qn, size_t k0, float* S) {
  const bool below_diagonal = k0 + kBc - 1 <= q0;
  const bool inside_window = g.W == 0 || k0 + g.W > q0 + qn - 1;
  if (below_diagonal && inside_window) return;
  for (size_t r = 0; r < qn; ++r) {
    const size_t i = q0 + r;
    const size_t first = (g.W > 0 && i + 1 > g.W) ? i + 1 - g.W : 0;  // keys first..i visible
    const size_t lo = std::min(kBc, first > k0 ? first - k0 : 0);
    const size_t hi = i + 1 > k0 ? std::min(kBc, i + 1 - k0) : 0;
    float* row = S + r * kBc;
    if (lo >= hi) {
      std::fill(row, row + kBc, kNegInf);
    } else {
      std::fill(row, row + lo, kNegInf);
      std::fill(row + hi, row + kBc, kNegInf);
    }
  }
}

// Copies `rows` rows of width hd, stride `stride`, into dst[rows × hdp] (padding zeroed).
void PackRows(const float* src, size_t stride, size_t rows, size_t hd, size_t hdp, float* dst) {
  for (size_t r = 0; r < rows; ++r) {
    std::memcpy(dst + r * hdp, src + r * stride, hd * sizeof(float));
    std::fill(dst + r * hdp + hd, dst + (r + 1) * hdp, 0.0f);
  }
}

// Transposes `rows` rows (stride `stride`) of width hd into dst[hd × kBc]; columns >= rows zeroed.
void PackTransposed(const float* src, size_t stride, size_t rows, size_t hd, float* dst) {
  for (size_t d = 0; d < hd; ++d) {
    float* out = dst + d * kBc;
    for (size_t r = 0; r < rows; ++r) out[r] = src[r * stride + d];
    std::fill(out + rows, out + kBc, 0.0f);
  }
}

// ---------------------------------------------------------------------------------------------
// Forward

void ForwardQueryTile(const Geometry& g, size_t b, size_t h, size_t qt, const float* q,
                      const float* k, const float* v, float* out, float* lse) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t kvh = h / g.group, hdp = g.hdp;
  const size_t q0 = qt * kBr, qn = std::min(kBr, g.T - q0);

  float* mem = tls_scratch.Get(kBr * hdp * 2 + hdp * kBc + kBc * hdp + kBr * kBc + 2 * kBr);
  float* Qp = mem;                  // [kBr × hdp]
  float* O = Qp + kBr * hdp;        // [kBr × hdp] unnormalised output
  float* KT = O + kBr * hdp;        // [hdp × kBc] (first hd rows used)
  float* Vp = KT + hdp * kBc;       // [kBc × hdp]
  float* S = Vp + kBc * hdp;        // [kBr × kBc] scores, then probabilities
  float* m = S + kBr * kBc;         // running row max
  float* l = m + kBr;               // running row sum

  PackRows(q + g.QRow(b, q0, h), g.H * g.hd, qn, g.hd, hdp, Qp);
  std::fill(O, O + qn * hdp, 0.0f);
  std::fill(m, m + qn, kNegInf);
  std::fill(l, l + qn, 0.0f);
  const VF vscale = hn::Set(d, g.scale);

  for (size_t kt = g.FirstKeyTile(qt); kt <= g.LastKeyTile(qt); ++kt) {
    const size_t k0 = kt * kBc, kn = std::min(kBc, g.T - k0);
    PackTransposed(k + g.KVRow(b, k0, kvh), g.KV * g.hd, kn, g.hd, KT);
    PackRows(v + g.KVRow(b, k0, kvh), g.KV * g.hd, kn, g.hd, hdp, Vp);

    Gemm<false>(qn, kBc, g.hd, Qp, hdp, 1, KT, kBc, S, kBc);
    MaskTile(g, q0, qn, k0, S);

    // Online softmax: rescale what was accumulated so far to the new row maximum.
    for (size_t r = 0; r < qn; ++r) {
      float* srow = S + r * kBc;
      VF vmax = hn::Set(d, kNegInf);
      for (size_t j = 0; j < kBc; j += N) {
        const VF x = hn::Mul(hn::LoadU(d, srow + j), vscale);
        hn::StoreU(x, d, srow + j);
        vmax = hn::Max(vmax, x);
      }
      const float m_new = std::max(m[r], hn::GetLane(hn::MaxOfLanes(d, vmax)));
      if (m_new == kNegInf) {  // nothing visible to this row yet
        std::fill(srow, srow + kBc, 0.0f);
        continue;
      }
      const VF vm = hn::Set(d, m_new);
      VF vsum = hn::Zero(d);
      for (size_t j = 0; j < kBc; j += N) {
        const VF p = hn::Exp(d, hn::Sub(hn::LoadU(d, srow + j), vm));
        hn::StoreU(p, d, srow + j);
        vsum = hn::Add(vsum, p);
      }
      const float alpha = std::exp(m[r] - m_new);  // 0 on the row's first visible tile
      l[r] = l[r] * alpha + hn::GetLane(hn::SumOfLanes(d, vsum));
      m[r] = m_new;
      if (alpha != 1.0f) {
        const VF va = hn::Set(d, alpha);
        float* orow = O + r * hdp;
        for (size_t c = 0; c < hdp; c += N) hn::StoreU(hn::Mul(hn::LoadU(d, orow + c), va), d, orow + c);
      }
    }
    Gemm<true>(qn, hdp, kn, S, kBc, 1, Vp, hdp, O, hdp);
  }

  for (size_t r = 0; r < qn; ++r) {
    float* orow = out + g.QRow(b, q0 + r, h);
    for (size_t c = 0; c < g.hd; ++c) orow[c] = O[r * hdp + c] / l[r];
    lse[g.LseAt(b, h, q0 + r)] = m[r] + std::log(l[r]);
  }
}

void ForwardImpl(const AttentionShape& s, const float* q, const float* k, const float* v,
                 float* out, float* lse) {
  const Geometry g(s);
  const int64_t units = static_cast<int64_t>(g.B * g.H * g.nqt);
  // Units are independent (each writes only its own rows), so a dynamic schedule balances the
  // uneven causal work without affecting any result.
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t u = 0; u < units; ++u) {
    const size_t qt = u % g.nqt, bh = u / g.nqt;
    ForwardQueryTile(g, bh / g.H, bh % g.H, qt, q, k, v, out, lse);
  }
}

// ---------------------------------------------------------------------------------------------
// Backward

struct BackwardArgs {
  const float *q, *k, *v, *out, *lse, *dout;
  float *dq, *dk, *dv;
};

// One key tile, packed three ways, and the dk/dv partial sums of that tile.
struct KeyTile {
  size_t k0, kn;
  float* KT;   // [hdp × kBc] kᵀ  (for S = q kᵀ)
  float* VT;   // [hdp × kBc] vᵀ  (for dP = dout vᵀ)
  float* Kp;   // [kBc × hdp] k   (for dq = dS k)
  float* dK;   // [kBc × hdp]
  float* dV;   // [kBc × hdp]
};

// One query tile of one head, packed, with its lse and D = rowsum(dout ∘ out).
struct QueryTile {
  size_t q0, qn, h;
  float* Qp;   // [kBr × hdp]
  float* dOp;  // [kBr × hdp]
  float* lse;  // [kBr]
  float* D;    // [kBr]
};

struct PairScratch {
  float* P;    // [kBr × kBc]
  float* dS;   // [kBr × kBc]
  float* dQ;   // [kBr × hdp]
};

size_t KeyTileFloats(const Geometry& g) { return 2 * g.hdp * kBc + 3 * kBc * g.hdp; }
size_t QueryTileFloats(const Geometry& g) { return 2 * kBr * g.hdp + 2 * kBr; }
size_t PairFloats(const Geometry& g) { return 2 * kBr * kBc + kBr * g.hdp; }

KeyTile CarveKeyTile(const Geometry& g, float* mem) {
  KeyTile t{};
  t.KT = mem;
  t.VT = t.KT + g.hdp * kBc;
  t.Kp = t.VT + g.hdp * kBc;
  t.dK = t.Kp + kBc * g.hdp;
  t.dV = t.dK + kBc * g.hdp;
  return t;
}
QueryTile CarveQueryTile(const Geometry& g, float* mem) {
  QueryTile t{};
  t.Qp = mem;
  t.dOp = t.Qp + kBr * g.hdp;
  t.lse = t.dOp + kBr * g.hdp;
  t.D = t.lse + kBr;
  return t;
}
PairScratch CarvePair(const Geometry& g, float* mem) {
  PairScratch p{};
  p.P = mem;
  p.dS = p.P + kBr * kBc;
  p.dQ = p.dS + kBr * kBc;
  return p;
}

void LoadKeyTile(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh, size_t kt,
                 KeyTile& t) {
  t.k0 = kt * kBc;
  t.kn = std::min(kBc, g.T - t.k0);
  const size_t stride = g.KV * g.hd;
  PackTransposed(a.k + g.KVRow(b, t.k0, kvh), stride, t.kn, g.hd, t.KT);
  PackTransposed(a.v + g.KVRow(b, t.k0, kvh), stride, t.kn, g.hd, t.VT);
  PackRows(a.k + g.KVRow(b, t.k0, kvh), stride, t.kn, g.hd, g.hdp, t.Kp);
}

void LoadQueryTile(const Geometry& g, const BackwardArgs& a, size_t b, size_t h, size_t qt,
                   QueryTile& t) {
  t.q0 = qt * kBr;
  t.qn = std::min(kBr, g.T - t.q0);
  t.h = h;
  const size_t stride = g.H * g.hd;
  PackRows(a.q + g.QRow(b, t.q0, h), stride, t.qn, g.hd, g.hdp, t.Qp);
  PackRows(a.dout + g.QRow(b, t.q0, h), stride, t.qn, g.hd, g.hdp, t.dOp);
  for (size_t r = 0; r < t.qn; ++r) {
    t.lse[r] = a.lse[g.LseAt(b, h, t.q0 + r)];
    const float* o = a.out + g.QRow(b, t.q0 + r, h);
    const float* dO = t.dOp + r * g.hdp;
    float D = 0;
    for (size_t c = 0; c < g.hd; ++c) D += dO[c] * o[c];
    t.D[r] = D;
  }
}

// The gradient contributions of one (query tile, key tile) pair: dk/dv partial sums into the key
// tile's accumulators when with_dkdv, and dq rows += this pair's share when `dq` is non-null.
void BackwardPair(const Geometry& g, const QueryTile& qt, KeyTile& kt, PairScratch& ps,
                  bool with_dkdv, float* dq, size_t dq_stride) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t hdp = g.hdp, qn = qt.qn, kn = kt.kn;

  Gemm<false>(qn, kBc, g.hd, qt.Qp, hdp, 1, kt.KT, kBc, ps.P, kBc);
  MaskTile(g, qt.q0, qn, kt.k0, ps.P);
  Gemm<false>(qn, kBc, g.hd, qt.dOp, hdp, 1, kt.VT, kBc, ps.dS, kBc);

  const VF vscale = hn::Set(d, g.scale);
  for (size_t r = 0; r < qn; ++r) {
    float* prow = ps.P + r * kBc;
    float* dsrow = ps.dS + r * kBc;
    const VF vlse = hn::Set(d, qt.lse[r]);
    const VF vD = hn::Set(d, qt.D[r]);
    for (size_t j = 0; j < kBc; j += N) {
      // Masked scores are -inf and give p = 0.
      const VF p = hn::Exp(d, hn::Sub(hn::Mul(hn::LoadU(d, prow + j), vscale), vlse));
      hn::StoreU(p, d, prow + j);
      const VF ds = hn::Mul(hn::Mul(p, hn::Sub(hn::LoadU(d, dsrow + j), vD)), vscale);
      hn::StoreU(ds, d, dsrow + j);
    }
  }

  if (with_dkdv) {
    Gemm<true>(kn, hdp, qn, ps.P, 1, kBc, qt.dOp, hdp, kt.dV, hdp);   // dV += Pᵀ dO
    Gemm<true>(kn, hdp, qn, ps.dS, 1, kBc, qt.Qp, hdp, kt.dK, hdp);   // dK += dSᵀ Q
  }
  if (dq != nullptr) {
    Gemm<false>(qn, hdp, kn, ps.dS, kBc, 1, kt.Kp, hdp, ps.dQ, hdp);  // this pair's dS K
    for (size_t r = 0; r < qn; ++r) {
      float* row = dq + r * dq_stride;
      const float* part = ps.dQ + r * hdp;
      for (size_t c = 0; c < g.hd; ++c) row[c] += part[c];
    }
  }
}

void AddKeyTileGrads(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh,
                     const KeyTile& t) {
  for (size_t r = 0; r < t.kn; ++r) {
    float* dk = a.dk + g.KVRow(b, t.k0 + r, kvh);
    float* dv = a.dv + g.KVRow(b, t.k0 + r, kvh);
    for (size_t c = 0; c < g.hd; ++c) {
      dk[c] += t.dK[r * g.hdp + c];
      dv[c] += t.dV[r * g.hdp + c];
    }
  }
}

// Every query tile of every head in kv head kvh's group against key tile kt, in a fixed order
// (heads, then query tiles, ascending). dq is updated too when with_dq.
void BackwardKeyTile(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh, size_t kt,
                     bool with_dq, float* mem) {
  KeyTile key = CarveKeyTile(g, mem);
  QueryTile query = CarveQueryTile(g, mem + KeyTileFloats(g));
  PairScratch ps = CarvePair(g, mem + KeyTileFloats(g) + QueryTileFloats(g));
  LoadKeyTile(g, a, b, kvh, kt, key);
  std::fill(key.dK, key.dK + kBc * g.hdp, 0.0f);
  std::fill(key.dV, key.dV + kBc * g.hdp, 0.0f);
  const size_t dq_stride = g.H * g.hd;
  for (size_t h = kvh * g.group; h < (kvh + 1) * g.group; ++h) {
    for (size_t qt = g.FirstQueryTile(kt); qt <= g.LastQueryTile(kt); ++qt) {
      LoadQueryTile(g, a, b, h, qt, query);
      float* dq = with_dq ? a.dq + g.QRow(b, query.q0, h) : nullptr;
      BackwardPair(g, query, key, ps, /*with_dkdv=*/true, dq, dq_stride);
    }
  }
  AddKeyTileGrads(g, a, b, kvh, key);
}

// dq of one query tile: its key tiles ascending, as BackwardKeyTile visits them.
void BackwardQueryTileDq(const Geometry& g, const BackwardArgs& a, size_t b, size_t h, size_t qt,
                         float* mem) {
  KeyTile key = CarveKeyTile(g, mem);
  QueryTile query = CarveQueryTile(g, mem + KeyTileFloats(g));
  PairScratch ps = CarvePair(g, mem + KeyTileFloats(g) + QueryTileFloats(g));
  LoadQueryTile(g, a, b, h, qt, query);
  float* dq = a.dq + g.QRow(b, query.q0, h);
  for (size_t kt = g.FirstKeyTile(qt); kt <= g.LastKeyTile(qt); ++kt) {
    LoadKeyTile(g, a, b, h / g.group, kt, key);
    BackwardPair(g, query, key, ps, /*with_dkdv=*/false, dq, g.H * g.hd);
  }
}

void BackwardImpl(const AttentionShape& s, const float* q, const float* k, const float* v,
                  const float* out, const float* lse, const float* dout, float* dq, float* dk,
                  float* dv, int scheme) {
  const Geometry g(s);
  const BackwardArgs a{q, k, v, out, lse, dout, dq, dk, dv};
  const size_t scratch = KeyTileFloats(g) + QueryTileFloats(g) + PairFloats(g);
  const int64_t groups = static_cast<int64_t>(g.B * g.KV);
  const int64_t threads = omp_get_max_threads();
  // scheme 0 = choose; 1 = one pass per (b, kv head); 2 = two passes. Same results either way.
  const bool one_pass =
      scheme == 1 || (scheme == 0 && (groups % threads == 0 || groups >= 4 * threads));
  if (one_pass) {
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < groups; ++u) {
      float* mem = tls_scratch.Get(scratch);
      for (size_t kt = 0; kt < g.nkt; ++kt) BackwardKeyTile(g, a, u / g.KV, u % g.KV, kt, true, mem);
    }
    return;
  }
  const int64_t key_units = groups * static_cast<int64_t>(g.nkt);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t u = 0; u < key_units; ++u) {
    const size_t kt = u % g.nkt, bg = u / g.nkt;
    BackwardKeyTile(g, a, bg / g.KV, bg % g.KV, kt, false, tls_scratch.Get(scratch));
  }
  const int64_t query_units = static_cast<int64_t>(g.B * g.H * g.nqt);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t u = 0; u < query_units; ++u) {
    const size_t qt = u % g.nqt, bh = u / g.nqt;
    BackwardQueryTileDq(g, a, bh / g.H, bh % g.H, qt, tls_scratch.Get(scratch));
  }
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);

void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* out, float* lse) {
  ValidateAttentionShape(s);
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(s, q, k, v, out, lse);
}

void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* out, const float* lse, const float* dout, float* dq, float* dk,
                       float* dv) {
  ValidateAttentionShape(s);
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(s, q, k, v, out, lse, dout, dq, dk, dv, 0);
}

void AttentionBackwardWithScheme(const AttentionShape& s, const float* q, const float* k,
                                 const float* v, const float* out, const float* lse,
                                 const float* dout, float* dq, float* dk, float* dv,
                                 AttentionBackwardScheme scheme) {
  ValidateAttentionShape(s);
  HWY_DYNAMIC_DISPATCH(BackwardImpl)(s, q, k, v, out, lse, dout, dq, dk, dv,
                                     static_cast<int>(scheme));
}
}  // namespace replica
#endif  // HWY_ONCE
