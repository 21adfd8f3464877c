// Tiled attention (FlashAttention-2 scheme) on fp32, SIMD through Highway with run-time target
// dispatch. Work is split into 64-query × 64-key tiles; only tiles that intersect the visible band
// (causal, plus the sliding window, plus the document bounds under intra-document masking) are
// touched, only tiles cut by the band's edges are masked, and in those the products that consume
// probabilities skip the masked part row block by row block. Document bounds are monotone in the
// position (a later query's document starts no earlier), so a query tile's visible keys are still
// one contiguous range of key tiles, from the first visible key of its first query: a tile whose
// queries and keys lie in different documents is never visited.
//
// Every tile product is a small GEMM in "broadcast" form, C[r, :] += A[r, k] · B[k, :], where the
// rows of B are contiguous: each output element is a sum over k in order, one FMA at a time, so a
// result does not depend on the vector width nor on the threads. Broadcast operands (A) are read
// in place from q, k, dout; operands re-read per row block (B) are packed contiguous, per tile.
//
// Forward, per (b, head, query tile): Sᵀ = k·qᵀ (keys × queries), so the online softmax runs down
// the columns with one query per lane, then O += P·v.
// Backward recomputes P from the saved lse. Threads: either one unit per (b, kv head) that owns
// dk, dv of that kv head and dq of its query heads (used when these units balance over the
// threads), or two passes: dk/dv per (b, kv head, key tile), then dq per (b, head, query tile).
// Both add the same per-tile terms in the same order (key tiles ascending into dq; query heads,
// then query tiles ascending into dk/dv), so they are bit-identical, and the choice between them,
// which depends on the thread count, changes no output (docs/design.md §2.3).
//
// bf16 precision (docs/precision.md): every operand of a tile product is rounded to bf16 (round to
// nearest even) and the products accumulate in fp32. q, k, v and dout are rounded as they are
// packed; P is rounded after the softmax (the running sums use the unrounded values) and dS after
// it is formed. Scores, softmax statistics, lse and D stay fp32.
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
#include <type_traits>
#include <vector>

#include "ops/cpu/attention.h"
#include "core/profile.h"
#include "ops/cpu/bf16_round.h"
#include "ops/document_mask.h"

HWY_BEFORE_NAMESPACE();
namespace replica {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

constexpr size_t kBr = 64;  // queries per tile
constexpr size_t kBc = 64;  // keys per tile
// Tiles are multiples of every lane count; the forward packs a query tile into a key-tile buffer.
static_assert(kBr % 16 == 0 && kBr == kBc);
// Packed head dims are padded to a multiple of this (a multiple of any lane count).
constexpr size_t kHdAlign = 16;
constexpr size_t kRows = 4;  // micro-kernel rows
// Vectors per micro-kernel row: kRows × kCols accumulators must fit the register file.
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

// Restricts a tile product to the visible band: in C = P·X (P masked probabilities or their
// gradients), row block [r, r + R) only needs the k range whose P entries can be non-zero. The
// skipped entries are masked, hence exactly 0, and adding 0·x leaves a sum unchanged (up to the
// sign of a zero), so results are the same; it saves the empty half of diagonal and window-edge
// tiles. All backward schemes skip alike, so they stay bit-identical.
struct Band {
  int64_t W;         // window (0 = full causal)
  int64_t row0, k0;  // position of row 0 and of k index 0
  bool rows_are_queries;
  // This row's document bounds by in-row position (Geometry::DocStart/DocEnd), or null.
  const int32_t* doc_start = nullptr;
  const int32_t* doc_end = nullptr;

  // [lo, hi) of k indices that rows [r, r + R) can see, clamped to [0, K].
  void Range(size_t r, size_t R, size_t K, size_t& lo, size_t& hi) const {
    const int64_t first = row0 + static_cast<int64_t>(r);
    const int64_t last = first + static_cast<int64_t>(R) - 1;
    int64_t a, b;
    if (rows_are_queries) {  // query i sees keys (i - W, i] from its document's start on
      a = (W > 0 ? first - W + 1 : 0);
      if (doc_start != nullptr) a = std::max<int64_t>(a, doc_start[first]);
      a -= k0;
      b = last + 1 - k0;
    } else {  // key j is seen by queries [j, j + W) before its document's end
      a = first - k0;
      b = W > 0 ? last + W - k0 : static_cast<int64_t>(K);
      if (doc_end != nullptr) b = std::min<int64_t>(b, doc_end[last] - k0);
    }
    const int64_t k = static_cast<int64_t>(K);
    lo = static_cast<size_t>(std::clamp<int64_t>(a, 0, k));
    hi = static_cast<size_t>(std::clamp<int64_t>(b, 0, k));
    if (hi < lo) hi = lo;
  }
};

// C[M × ncols] (+)= A[M × K] · B[K × ncols]; ncols a multiple of the lane count. With a band,
// each row block sums only over the k range the band allows.
template <bool kAccumulate>
void Gemm(size_t M, size_t ncols, size_t K, const float* A, size_t ars, size_t acs, const float* B,
          size_t ldb, float* C, size_t ldc, const Band* band = nullptr) {
  auto rows = [&](size_t i, auto R) {
    size_t lo = 0, hi = K;
    if (band != nullptr) band->Range(i, decltype(R)::value, K, lo, hi);
    if (kAccumulate && lo == hi) return;
    GemmRows<decltype(R)::value, kAccumulate>(ncols, hi - lo, A + i * ars + lo * acs, ars, acs,
                                              B + lo * ldb, ldb, C + i * ldc, ldc);
  };
  size_t i = 0;
  for (; i + kRows <= M; i += kRows) rows(i, std::integral_constant<size_t, kRows>());
  for (; i < M; ++i) rows(i, std::integral_constant<size_t, 1>());
}

// Per-thread scratch that grows and is then reused (no allocation in a steady training step).
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
thread_local Scratch tls_tile_scratch;  // tile buffers of the unit a thread is running
thread_local Scratch tls_unit_scratch;  // packed rows of a backward (b, kv head) unit
thread_local Scratch tls_call_scratch;  // per-call arrays, on the calling thread

struct Geometry {
  size_t B, T, H, KV, hd, hdp, W, group, nqt, nkt;
  float scale;
  bool bf16;  // round product operands to bf16
  // Under intra-document masking, [B*T] in-row [start, end) of each position's document; else null.
  const int32_t* doc_start = nullptr;
  const int32_t* doc_end = nullptr;

  Geometry(const AttentionShape& s, bool round_bf16)
      : B(s.B),
        T(s.T),
        H(s.H),
        KV(s.KV),
        hd(s.hd),
        hdp((static_cast<size_t>(s.hd) + kHdAlign - 1) / kHdAlign * kHdAlign),
        W(s.window),
        group(s.H / s.KV),
        nqt((s.T + kBr - 1) / kBr),
        nkt((s.T + kBc - 1) / kBc),
        scale(static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hd)))),
        bf16(round_bf16) {}

  size_t QRow(size_t b, size_t t, size_t h) const { return ((b * T + t) * H + h) * hd; }
  size_t KVRow(size_t b, size_t t, size_t g) const { return ((b * T + t) * KV + g) * hd; }
  size_t LseRow(size_t b, size_t h) const { return (b * H + h) * T; }
  size_t QStride() const { return H * hd; }
  size_t KVStride() const { return KV * hd; }

  // Row b's document bounds by in-row position, or null without masking.
  const int32_t* DocStart(size_t b) const { return doc_start ? doc_start + b * T : nullptr; }
  const int32_t* DocEnd(size_t b) const { return doc_end ? doc_end + b * T : nullptr; }
  // Key j is visible to query i of row b iff First(b, i) <= j <= i, and so iff j <= i < End(b, j).
  size_t First(size_t b, size_t i) const {
    const size_t first = (W > 0 && i + 1 > W) ? i + 1 - W : 0;
    return doc_start ? std::max<size_t>(first, doc_start[b * T + i]) : first;
  }
  size_t End(size_t b, size_t j) const {
    const size_t end = W > 0 ? j + W : T;
    return doc_end ? std::min<size_t>(end, doc_end[b * T + j]) : end;
  }
  // Key tiles a query tile sees, [first, last]; query tiles that see a key tile, [first, last].
  // Both bounds are monotone in the position, so the tiles between them all hold visible pairs,
  // and (qt, kt) is in one range iff kt is in the other.
  size_t FirstKeyTile(size_t b, size_t qt) const { return First(b, qt * kBr) / kBc; }
  size_t LastKeyTile(size_t qt) const { return (std::min(T, (qt + 1) * kBr) - 1) / kBc; }
  size_t FirstQueryTile(size_t kt) const { return kt * kBc / kBr; }
  size_t LastQueryTile(size_t b, size_t kt) const {
    const size_t last_key = std::min(T, (kt + 1) * kBc) - 1;
    return (std::min(T, End(b, last_key)) - 1) / kBr;
  }
  // True when every (query, key) of the two full tiles is visible.
  bool TileFullyVisible(size_t b, size_t q0, size_t qn, size_t k0, size_t kn) const {
    return qn == kBr && kn == kBc && k0 + kBc - 1 <= q0 && First(b, q0 + kBr - 1) <= k0;
  }
};

// The document bounds of a call with intra-document masking, on the calling thread (read by all).
thread_local std::vector<int32_t> tls_doc_bounds;

// Sets g's document bounds from s.cu_doc_lens (validated), or leaves them null.
void BindDocuments(const AttentionShape& s, Geometry& g) {
  if (s.cu_doc_lens == nullptr) return;
  const size_t n = g.B * g.T;
  tls_doc_bounds.resize(2 * n);
  DocumentBounds(s.cu_doc_lens, s.num_cu_doc_lens, s.B, s.T, tls_doc_bounds.data(),
                 tls_doc_bounds.data() + n);
  g.doc_start = tls_doc_bounds.data();
  g.doc_end = tls_doc_bounds.data() + n;
}

// Copies `rows` rows of width hd, `stride` apart, to a contiguous zero-padded [rows × hdp] buffer.
// Operands that a product re-reads for every row block are packed like this: in place, rows H·hd
// floats apart (2 KiB at the bench shape) map onto a handful of L1 sets and evict each other.
// With g.bf16 the copies are rounded to bf16.
void PackRows(const Geometry& g, const float* src, size_t stride, size_t rows, float* dst) {
  for (size_t r = 0; r < rows; ++r) {
    if (g.bf16) {
      for (size_t c = 0; c < g.hd; ++c) dst[r * g.hdp + c] = RoundToBf16(src[r * stride + c]);
    } else {
      std::memcpy(dst + r * g.hdp, src + r * stride, g.hd * sizeof(float));
    }
    std::fill(dst + r * g.hdp + g.hd, dst + (r + 1) * g.hdp, 0.0f);
  }
}

// Each lane rounded to the nearest bf16 (ties to even), kept in fp32; NaN lanes pass through.
HWY_INLINE VF RoundBf16(VF x) {
  const DF d;
  const hn::RebindToUnsigned<DF> du;
  const auto u = hn::BitCast(du, x);
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
  const auto r = hn::And(hn::Add(hn::Add(u, hn::Set(du, 0x7fffu)), lsb), hn::Set(du, 0xffff0000u));
  return hn::IfThenElse(hn::IsNaN(x), x, hn::BitCast(d, r));
}

// dst[hd × width] = transpose of `rows` packed rows (stride hdp); columns rows..width-1 zeroed.
// Transposes read packed rows, not q, k, v in place: the row copies are plain streaming loads,
// while a transposing loop over strided rows stalls on cache misses.
void PackTransposed(const Geometry& g, const float* packed, size_t rows, size_t width,
                    float* dst) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = packed + r * g.hdp;
    for (size_t c = 0; c < g.hd; ++c) dst[c * width + r] = row[c];
  }
  for (size_t c = 0; c < g.hd; ++c) std::fill(dst + c * width + rows, dst + (c + 1) * width, 0.0f);
}

// dst[0:n) += src[0:n).
void AddTo(float* HWY_RESTRICT dst, const float* HWY_RESTRICT src, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Add(hn::LoadU(d, dst + i), hn::LoadU(d, src + i)), d, dst + i);
  }
  for (; i < n; ++i) dst[i] += src[i];
}

// Σ a[i]·b[i] over [0, n).
float Dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  VF acc = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) acc = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), acc);
  float sum = hn::GetLane(hn::SumOfLanes(d, acc));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Forward

void ForwardQueryTile(const Geometry& g, size_t b, size_t h, size_t qt, const float* q,
                      const float* k, const float* v, float* out, float* lse) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t kvh = h / g.group, hdp = g.hdp;
  const size_t q0 = qt * kBr, qn = std::min(kBr, g.T - q0);

  float* mem = tls_tile_scratch.Get(g.hd * kBr + kBc * kBr + kBr * hdp + 2 * kBc * hdp + 3 * kBr);
  float* QT = mem;              // [hd × kBr]  qᵀ of this tile
  float* ST = QT + g.hd * kBr;  // [kBc × kBr] scores, then probabilities (keys × queries)
  float* O = ST + kBc * kBr;    // [kBr × hdp] unnormalised output
  float* Kp = O + kBr * hdp;    // [kBc × hdp] packed k rows
  float* Vp = Kp + kBc * hdp;   // [kBc × hdp] packed v rows
  float* m = Vp + kBc * hdp;    // running max per query
  float* l = m + kBr;           // running sum per query
  float* alpha = l + kBr;       // rescale factor of this key tile per query

  PackRows(g, q + g.QRow(b, q0, h), g.QStride(), qn, Vp);  // Vp is free until the first key tile
  PackTransposed(g, Vp, qn, kBr, QT);
  std::fill(O, O + kBr * hdp, 0.0f);
  std::fill(m, m + kBr, kNegInf);
  std::fill(l, l + kBr, 0.0f);
  const VF vscale = hn::Set(d, g.scale);
  const VF vneginf = hn::Set(d, kNegInf);

  for (size_t kt = g.FirstKeyTile(b, qt); kt <= g.LastKeyTile(qt); ++kt) {
    const size_t k0 = kt * kBc, kn = std::min(kBc, g.T - k0);
    PackRows(g, k + g.KVRow(b, k0, kvh), g.KVStride(), kn, Kp);
    PackRows(g, v + g.KVRow(b, k0, kvh), g.KVStride(), kn, Vp);
    Gemm<false>(kn, kBr, g.hd, Kp, hdp, 1, QT, kBr, ST, kBr);  // Sᵀ = k qᵀ
    if (!g.TileFullyVisible(b, q0, qn, k0, kn)) {
      for (size_t j = 0; j < kn; ++j) {  // key k0+j is visible to queries [key, End(key)) ∩ tile
        const size_t key = k0 + j;
        const size_t lo = std::min(qn, key > q0 ? key - q0 : 0);
        const size_t end = g.End(b, key);
        const size_t hi = end > q0 ? std::min(qn, end - q0) : 0;
        float* row = ST + j * kBr;
        if (lo >= hi) {
          std::fill(row, row + kBr, kNegInf);
        } else {
          std::fill(row, row + lo, kNegInf);
          std::fill(row + hi, row + kBr, kNegInf);
        }
      }
    }
    // Online softmax down each column (one query per lane).
    for (size_t c = 0; c < kBr; c += N) {
      VF vmax = vneginf;
      for (size_t j = 0; j < kn; ++j) {
        const VF x = hn::Mul(hn::LoadU(d, ST + j * kBr + c), vscale);
        hn::StoreU(x, d, ST + j * kBr + c);
        vmax = hn::Max(vmax, x);
      }
      const VF m_old = hn::LoadU(d, m + c);
      const VF m_new = hn::Max(m_old, vmax);
      // A query with nothing visible yet keeps m = -inf; subtract 0 for it to avoid inf - inf.
      const VF m_sub = hn::IfThenZeroElse(hn::Eq(m_new, vneginf), m_new);
      VF sum = hn::Zero(d);
      for (size_t j = 0; j < kn; ++j) {
        const VF p = hn::Exp(d, hn::Sub(hn::LoadU(d, ST + j * kBr + c), m_sub));
        hn::StoreU(g.bf16 ? RoundBf16(p) : p, d, ST + j * kBr + c);
        sum = hn::Add(sum, p);
      }
      const VF a = hn::Exp(d, hn::Sub(m_old, m_sub));  // 0 on a query's first visible tile
      hn::StoreU(hn::MulAdd(hn::LoadU(d, l + c), a, sum), d, l + c);
      hn::StoreU(m_new, d, m + c);
      hn::StoreU(a, d, alpha + c);
    }
    for (size_t r = 0; r < qn; ++r) {
      const VF a = hn::Set(d, alpha[r]);
      float* orow = O + r * hdp;
      for (size_t c = 0; c < hdp; c += N)
        hn::StoreU(hn::Mul(hn::LoadU(d, orow + c), a), d, orow + c);
    }
    const Band band{static_cast<int64_t>(g.W), static_cast<int64_t>(q0), static_cast<int64_t>(k0),
                    /*rows_are_queries=*/true, g.DocStart(b), g.DocEnd(b)};
    Gemm<true>(qn, hdp, kn, ST, 1, kBr, Vp, hdp, O, hdp, &band);  // O += P v
  }

  for (size_t r = 0; r < qn; ++r) {
    float* orow = out + g.QRow(b, q0 + r, h);
    for (size_t c = 0; c < g.hd; ++c) orow[c] = O[r * hdp + c] / l[r];
    lse[g.LseRow(b, h) + q0 + r] = m[r] + std::log(l[r]);
  }
}

void ForwardImpl(const AttentionShape& s, const float* q, const float* k, const float* v,
                 float* out, float* lse, bool bf16) {
  Geometry g(s, bf16);
  BindDocuments(s, g);
  const int64_t units = static_cast<int64_t>(g.B * g.H * g.nqt);
  // Units are independent (each writes only its own rows of out and lse), so a dynamic schedule
  // balances the uneven causal work without affecting any result.
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
  const float* D;  // [B, H, T] rowsum(dout ∘ out)
};

// Tile buffers of one thread's backward work.
struct BackwardScratch {
  float* KT;   // [hd × kBc]  kᵀ of the key tile (for S = q kᵀ)
  float* VT;   // [hd × kBc]  vᵀ (for dP = dout vᵀ)
  float* Kp;   // [kBc × hdp] k rows of the key tile (for dq += dS k)
  float* Vp;   // [kBc × hdp] v rows (to transpose from)
  float* dK;   // [kBc × hdp] the key tile's dk sums
  float* dV;   // [kBc × hdp]
  float* P;    // [kBr × kBc]
  float* dS;   // [kBr × kBc] dP, then dS
  float* Qp;   // [kBr × hdp] one query tile's q rows, dout rows and dq sums (two-pass scheme)
  float* dOp;  // [kBr × hdp]
  float* dQ;   // [kBr × hdp]

  static size_t Floats(const Geometry& g) {
    return 2 * g.hd * kBc + 4 * kBc * g.hdp + 2 * kBr * kBc + 3 * kBr * g.hdp;
  }
  BackwardScratch(const Geometry& g, float* mem) {
    KT = mem;
    VT = KT + g.hd * kBc;
    Kp = VT + g.hd * kBc;
    Vp = Kp + kBc * g.hdp;
    dK = Vp + kBc * g.hdp;
    dV = dK + kBc * g.hdp;
    P = dV + kBc * g.hdp;
    dS = P + kBr * kBc;
    Qp = dS + kBr * kBc;
    dOp = Qp + kBr * g.hdp;
    dQ = dOp + kBr * g.hdp;
  }
};

// One head's query rows from position `first` on, packed [rows × hdp]: q and dout as product
// operands, and the dq sums (nullptr when dq is not wanted). Packed because in place, rows H·hd
// floats apart, a head's rows crowd into a fraction of the cache sets and evict each other.
struct QueryRows {
  const float* q;
  const float* dout;
  float* dq;
  size_t first;
};

// The key tile kt of kv head kvh, packed for the products.
struct KeyTile {
  size_t k0, kn;
};
KeyTile LoadKeyTile(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh, size_t kt,
                    BackwardScratch& s) {
  KeyTile t{kt * kBc, std::min(kBc, g.T - kt * kBc)};
  PackRows(g, a.k + g.KVRow(b, t.k0, kvh), g.KVStride(), t.kn, s.Kp);
  PackTransposed(g, s.Kp, t.kn, kBc, s.KT);
  PackRows(g, a.v + g.KVRow(b, t.k0, kvh), g.KVStride(), t.kn, s.Vp);
  PackTransposed(g, s.Vp, t.kn, kBc, s.VT);
  return t;
}

// The terms of one (query tile, key tile) pair of head h: into the key tile's dK, dV sums when
// with_dkdv, and into the dq sums when rows.dq is set.
void BackwardPair(const Geometry& g, const BackwardArgs& a, size_t b, size_t h, size_t qt,
                  const KeyTile& kt, const QueryRows& rows, BackwardScratch& s, bool with_dkdv) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t hdp = g.hdp, q0 = qt * kBr, qn = std::min(kBr, g.T - q0), kn = kt.kn;
  const float* q = rows.q + (q0 - rows.first) * hdp;
  const float* dout = rows.dout + (q0 - rows.first) * hdp;
  const float* lse = a.lse + g.LseRow(b, h) + q0;
  const float* D = a.D + g.LseRow(b, h) + q0;

  Gemm<false>(qn, kBc, g.hd, q, hdp, 1, s.KT, kBc, s.P, kBc);  // S = q kᵀ
  if (!g.TileFullyVisible(b, q0, qn, kt.k0, kn)) {
    for (size_t r = 0; r < qn; ++r) {
      const size_t i = q0 + r;
      const size_t first = g.First(b, i);
      const size_t lo = std::min(kBc, first > kt.k0 ? first - kt.k0 : 0);
      const size_t hi = i + 1 > kt.k0 ? std::min(kBc, i + 1 - kt.k0) : 0;
      float* row = s.P + r * kBc;
      if (lo >= hi) {
        std::fill(row, row + kBc, kNegInf);
      } else {
        std::fill(row, row + lo, kNegInf);
        std::fill(row + hi, row + kBc, kNegInf);
      }
    }
  }
  Gemm<false>(qn, kBc, g.hd, dout, hdp, 1, s.VT, kBc, s.dS, kBc);  // dP = dout vᵀ

  const VF vscale = hn::Set(d, g.scale);
  for (size_t r = 0; r < qn; ++r) {
    float* prow = s.P + r * kBc;
    float* dsrow = s.dS + r * kBc;
    const VF vlse = hn::Set(d, lse[r]);
    const VF vD = hn::Set(d, D[r]);
    for (size_t j = 0; j < kBc; j += N) {
      // Masked scores are -inf and give p = 0 (key columns past the sequence are masked too).
      const VF p = hn::Exp(d, hn::Sub(hn::Mul(hn::LoadU(d, prow + j), vscale), vlse));
      const VF ds = hn::Mul(hn::Mul(p, hn::Sub(hn::LoadU(d, dsrow + j), vD)), vscale);
      hn::StoreU(g.bf16 ? RoundBf16(p) : p, d, prow + j);
      hn::StoreU(g.bf16 ? RoundBf16(ds) : ds, d, dsrow + j);
    }
  }

  if (with_dkdv) {
    const Band band{static_cast<int64_t>(g.W), static_cast<int64_t>(kt.k0),
                    static_cast<int64_t>(q0), /*rows_are_queries=*/false, g.DocStart(b),
                    g.DocEnd(b)};
    Gemm<true>(kn, hdp, qn, s.P, 1, kBc, dout, hdp, s.dV, hdp, &band);  // dV += Pᵀ dout
    Gemm<true>(kn, hdp, qn, s.dS, 1, kBc, q, hdp, s.dK, hdp, &band);    // dK += dSᵀ q
  }
  if (rows.dq != nullptr) {
    const Band band{static_cast<int64_t>(g.W), static_cast<int64_t>(q0),
                    static_cast<int64_t>(kt.k0), /*rows_are_queries=*/true, g.DocStart(b),
                    g.DocEnd(b)};
    float* dq = rows.dq + (q0 - rows.first) * hdp;
    Gemm<true>(qn, hdp, kn, s.dS, kBc, 1, s.Kp, hdp, dq, hdp, &band);  // dq += dS k
  }
}

// Every query tile of every head in kv head kvh's group against key tile kt, in a fixed order
// (heads, then query tiles, ascending), then dk, dv += the tile's sums. rows_of(h, qt) gives the
// packed query rows of head h that cover query tile qt.
template <class RowsOf>
void BackwardKeyTile(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh, size_t kt,
                     BackwardScratch& s, const RowsOf& rows_of) {
  const KeyTile key = LoadKeyTile(g, a, b, kvh, kt, s);
  std::fill(s.dK, s.dK + kBc * g.hdp, 0.0f);
  std::fill(s.dV, s.dV + kBc * g.hdp, 0.0f);
  for (size_t h = kvh * g.group; h < (kvh + 1) * g.group; ++h) {
    for (size_t qt = g.FirstQueryTile(kt); qt <= g.LastQueryTile(b, kt); ++qt) {
      BackwardPair(g, a, b, h, qt, key, rows_of(h, qt), s, /*with_dkdv=*/true);
    }
  }
  for (size_t r = 0; r < key.kn; ++r) {
    AddTo(a.dk + g.KVRow(b, key.k0 + r, kvh), s.dK + r * g.hdp, g.hd);
    AddTo(a.dv + g.KVRow(b, key.k0 + r, kvh), s.dV + r * g.hdp, g.hd);
  }
}

// dq rows of head h from position t0 += the packed sums.
void AddDq(const Geometry& g, const BackwardArgs& a, size_t b, size_t h, size_t t0, size_t n,
           const float* sums) {
  for (size_t r = 0; r < n; ++r) AddTo(a.dq + g.QRow(b, t0 + r, h), sums + r * g.hdp, g.hd);
}

// Scheme 1: everything of (b, kv head) in one unit. Its heads' q and dout rows are packed once,
// and dq is summed over key tiles (ascending) in a packed buffer before it is added to dq.
void BackwardGroup(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh,
                   BackwardScratch& s, float* unit) {
  const size_t head_floats = g.T * g.hdp;
  float* Q = unit;                             // [group × T × hdp]
  float* dO = Q + g.group * head_floats;       // [group × T × hdp]
  float* dQ = dO + g.group * head_floats;      // [group × T × hdp]
  for (size_t i = 0; i < g.group; ++i) {
    const size_t h = kvh * g.group + i;
    PackRows(g, a.q + g.QRow(b, 0, h), g.QStride(), g.T, Q + i * head_floats);
    PackRows(g, a.dout + g.QRow(b, 0, h), g.QStride(), g.T, dO + i * head_floats);
    std::fill(dQ + i * head_floats, dQ + (i + 1) * head_floats, 0.0f);
  }
  auto rows_of = [&](size_t h, size_t) {
    const size_t i = h - kvh * g.group;
    return QueryRows{Q + i * head_floats, dO + i * head_floats, dQ + i * head_floats, 0};
  };
  for (size_t kt = 0; kt < g.nkt; ++kt) BackwardKeyTile(g, a, b, kvh, kt, s, rows_of);
  for (size_t i = 0; i < g.group; ++i) AddDq(g, a, b, kvh * g.group + i, 0, g.T, dQ + i * head_floats);
}

// Scheme 2, first pass: dk, dv of one key tile; query tiles are packed as they come.
void BackwardKeyTileOnly(const Geometry& g, const BackwardArgs& a, size_t b, size_t kvh,
                         size_t kt, BackwardScratch& s) {
  auto rows_of = [&](size_t h, size_t qt) {
    const size_t q0 = qt * kBr, qn = std::min(kBr, g.T - q0);
    PackRows(g, a.q + g.QRow(b, q0, h), g.QStride(), qn, s.Qp);
    PackRows(g, a.dout + g.QRow(b, q0, h), g.QStride(), qn, s.dOp);
    return QueryRows{s.Qp, s.dOp, nullptr, q0};
  };
  BackwardKeyTile(g, a, b, kvh, kt, s, rows_of);
}

// Scheme 2, second pass: dq of one query tile, summed over its key tiles ascending (the order in
// which BackwardGroup reaches them), then added to dq.
void BackwardQueryTileDq(const Geometry& g, const BackwardArgs& a, size_t b, size_t h, size_t qt,
                         BackwardScratch& s) {
  const size_t q0 = qt * kBr, qn = std::min(kBr, g.T - q0);
  PackRows(g, a.q + g.QRow(b, q0, h), g.QStride(), qn, s.Qp);
  PackRows(g, a.dout + g.QRow(b, q0, h), g.QStride(), qn, s.dOp);
  std::fill(s.dQ, s.dQ + kBr * g.hdp, 0.0f);
  const QueryRows rows{s.Qp, s.dOp, s.dQ, q0};
  for (size_t kt = g.FirstKeyTile(b, qt); kt <= g.LastKeyTile(qt); ++kt) {
    const KeyTile key = LoadKeyTile(g, a, b, h / g.group, kt, s);
    BackwardPair(g, a, b, h, qt, key, rows, s, /*with_dkdv=*/false);
  }
  AddDq(g, a, b, h, q0, qn, s.dQ);
}

// Above this many floats of packed rows per (b, kv head) unit (large groups × long sequences),
// the two-pass scheme is used whatever the thread count.
constexpr size_t kMaxGroupUnitFloats = size_t{16} << 20;  // 64 MiB

void BackwardImpl(const AttentionShape& shape, const float* q, const float* k, const float* v,
                  const float* out, const float* lse, const float* dout, float* dq, float* dk,
                  float* dv, int scheme, bool bf16) {
  Geometry g(shape, bf16);
  BindDocuments(shape, g);
  const int64_t rows = static_cast<int64_t>(g.B * g.H * g.T);
  float* D = tls_call_scratch.Get(rows);
  const int64_t positions = static_cast<int64_t>(g.B * g.T);
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < positions; ++bt) {  // memory order of out and dout
    const size_t b = bt / g.T, t = bt % g.T;
    for (size_t h = 0; h < g.H; ++h) {
      const size_t at = g.QRow(b, t, h);
      D[g.LseRow(b, h) + t] = Dot(dout + at, out + at, g.hd);
    }
  }
  const BackwardArgs a{q, k, v, out, lse, dout, dq, dk, dv, D};
  const size_t tile_floats = BackwardScratch::Floats(g);
  const size_t unit_floats = 3 * g.group * g.T * g.hdp;
  const int64_t groups = static_cast<int64_t>(g.B * g.KV);
  const int64_t threads = omp_get_max_threads();
  // scheme 0 = choose; 1 = one pass per (b, kv head); 2 = two passes. Same results either way.
  const bool balanced = groups % threads == 0 || groups >= 4 * threads;
  const bool one_pass =
      scheme == 1 || (scheme == 0 && balanced && unit_floats <= kMaxGroupUnitFloats);
  if (one_pass) {
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < groups; ++u) {
      BackwardScratch s(g, tls_tile_scratch.Get(tile_floats));
      BackwardGroup(g, a, u / g.KV, u % g.KV, s, tls_unit_scratch.Get(unit_floats));
    }
    return;
  }
  const int64_t key_units = groups * static_cast<int64_t>(g.nkt);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t u = 0; u < key_units; ++u) {
    const size_t kt = u % g.nkt, bg = u / g.nkt;
    BackwardScratch s(g, tls_tile_scratch.Get(tile_floats));
    BackwardKeyTileOnly(g, a, bg / g.KV, bg % g.KV, kt, s);
  }
  const int64_t query_units = static_cast<int64_t>(g.B * g.H * g.nqt);
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t u = 0; u < query_units; ++u) {
    const size_t qt = u % g.nqt, bh = u / g.nqt;
    BackwardScratch s(g, tls_tile_scratch.Get(tile_floats));
    BackwardQueryTileDq(g, a, bh / g.H, bh % g.H, qt, s);
  }
}

// The (query tile, key tile) pairs of one head that the forward visits (by query tile) and that
// the backward visits (by key tile), summed over b and the heads.
void TilePairsImpl(const AttentionShape& s, int64_t* forward, int64_t* backward) {
  Geometry g(s, false);
  BindDocuments(s, g);
  *forward = 0;
  *backward = 0;
  for (size_t b = 0; b < g.B; ++b) {
    for (size_t qt = 0; qt < g.nqt; ++qt) {
      *forward += static_cast<int64_t>(g.LastKeyTile(qt) - g.FirstKeyTile(b, qt) + 1);
    }
    for (size_t kt = 0; kt < g.nkt; ++kt) {
      *backward += static_cast<int64_t>(g.LastQueryTile(b, kt) - g.FirstQueryTile(kt) + 1);
    }
  }
  *forward *= static_cast<int64_t>(g.H);
  *backward *= static_cast<int64_t>(g.H);
}

}  // namespace
}  // namespace HWY_NAMESPACE
}  // namespace replica
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace replica {
HWY_EXPORT(ForwardImpl);
HWY_EXPORT(BackwardImpl);
HWY_EXPORT(TilePairsImpl);

AttentionTilePairs CountAttentionTilePairs(const AttentionShape& s) {
  ValidateAttentionShape(s);
  AttentionTilePairs pairs;
  HWY_DYNAMIC_DISPATCH(TilePairsImpl)(s, &pairs.forward, &pairs.backward);
  return pairs;
}

void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                      float* out, float* lse, Precision precision) {
  ProfileScope profile_scope(ProfileCategory::kAttention);
  ValidateAttentionShape(s);
  HWY_DYNAMIC_DISPATCH(ForwardImpl)(s, q, k, v, out, lse, precision == Precision::kBf16);
}

void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       const float* out, const float* lse, const float* dout, float* dq, float* dk,
                       float* dv, Precision precision) {
  ProfileScope profile_scope(ProfileCategory::kAttention);
  ValidateAttentionShape(s);
  HWY_DYNAMIC_DISPATCH(BackwardImpl)
  (s, q, k, v, out, lse, dout, dq, dk, dv, 0, precision == Precision::kBf16);
}

void AttentionBackwardWithScheme(const AttentionShape& s, const float* q, const float* k,
                                 const float* v, const float* out, const float* lse,
                                 const float* dout, float* dq, float* dk, float* dv,
                                 AttentionBackwardScheme scheme, Precision precision) {
  ProfileScope profile_scope(ProfileCategory::kAttention);
  ValidateAttentionShape(s);
  HWY_DYNAMIC_DISPATCH(BackwardImpl)
  (s, q, k, v, out, lse, dout, dq, dk, dv, static_cast<int>(scheme),
   precision == Precision::kBf16);
}
}  // namespace replica
#endif  // HWY_ONCE
