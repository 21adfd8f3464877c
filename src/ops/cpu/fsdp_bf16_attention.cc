// Attention as torch's CPU flash kernel (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp, its
// bf16 path) computes it (fsdp_bf16.h): the same query and key blocks, the same fp32 sums in the
// same orders where they decide a bf16 rounding, its fast exp in the forward. One (b, query head)
// pair per task; every output element is owned by one task and summed in a fixed order, so
// results do not depend on the thread count. The backward's block products are ordered GEMMs
// (pair_order_gemm.h): SIMD across outputs, each output still one accumulator in its order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/profile.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/fsdp_bf16.h"
#include "ops/cpu/pair_order_gemm.h"
#include "ops/document_mask.h"

namespace replica {
namespace {

inline float R(float x) { return RoundToBf16(x); }
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The visible keys of query i of row b: [lo, i].
struct Visibility {
  std::vector<int32_t> start;  // in-row document start of each flat position; empty = row start
  int64_t T, window;
  int64_t Lo(int64_t b, int64_t i) const {
    int64_t lo = window > 0 ? std::max<int64_t>(0, i - window + 1) : 0;
    if (!start.empty()) lo = std::max<int64_t>(lo, start[static_cast<size_t>(b * T + i)]);
    return lo;
  }
};

Visibility MakeVisibility(const AttentionShape& s) {
  Visibility vis{{}, s.T, s.window};
  if (s.cu_doc_lens != nullptr) {
    vis.start.resize(static_cast<size_t>(s.B * s.T));
    std::vector<int32_t> end(static_cast<size_t>(s.B * s.T));
    DocumentBounds(s.cu_doc_lens, s.num_cu_doc_lens, s.B, s.T, vis.start.data(), end.data());
  }
  return vis;
}

// Σ a·b with one fp32 accumulator in index order (the kernel's fp32-output GEMMs and row sums).
float Dot(const float* a, const float* b, int64_t n) {
  float acc = 0;
  for (int64_t d = 0; d < n; ++d) acc += a[d] * b[d];
  return acc;
}

// ATen's fexp_u20 (the flash kernel's exp of s − max for bf16 inputs): 2^(x log2 e) with the
// fraction corrected by a cubic and put together in the exponent bits.
float FastExp(float x) {
  auto bits_float = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  if (std::isnan(x)) return x;
  if (x < bits_float(0xc2aeac50u)) return 0.0f;
  if (x > bits_float(0x42b17218u)) return std::numeric_limits<float>::infinity();
  const float c0 = 0.00010703434948458272f, c1 = 0.30354260500649682f,
              c2 = -0.22433836478672356f, c3 = -0.079204240219773236f;
  float t = x * bits_float(0x3fb8aa3bu);
  const float f = t - std::floor(t);
  const float c = std::fma(f, std::fma(f, std::fma(f, c3, c2), c1), c0);
  t = t - c;
  const float scaled = std::fma(0x1p23f, t, 0x1p23f * 127.0f);
  const int32_t i = static_cast<int32_t>(scaled);  // truncation, as the kernel's cvttps
  float r;
  std::memcpy(&r, &i, 4);
  return r;
}

// The flash kernel's row sum of a block's exp values: a 16-lane accumulator over consecutive
// 16-element chunks, the lanes folded i + (i^8), then ^4, ^2, ^1, the n % 16 tail added after.
float BlockRowSum(const float* p, int64_t n) {
  float lane[16] = {};
  const int64_t full = n - n % 16;
  for (int64_t c = 0; c < full; c += 16)
    for (int k = 0; k < 16; ++k) lane[k] += p[c + k];
  for (int width = 8; width >= 1; width /= 2)
    for (int k = 0; k < width; ++k) lane[k] = lane[k] + lane[k + width];
  float s = lane[0];
  for (int64_t j = full; j < n; ++j) s += p[j];
  return s;
}

// The kernel's block sizes, from the query length (the same forward and backward).
int64_t QueryBlock(int64_t T) {
  return std::min<int64_t>(T >= 768 ? 256 : T >= 192 ? 64 : 32, T);
}
int64_t KeyBlock(int64_t T) { return std::min(kFsdpAttentionKeyBlock, T); }

}  // namespace

void FsdpAttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                          float* out, float* lse) {
  ValidateAttentionShape(s);
  ProfileScope profile_scope(ProfileCategory::kAttention);
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, group = H / KV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t kb = KeyBlock(T);
  const Visibility vis = MakeVisibility(s);
#pragma omp parallel for schedule(dynamic, 1) if (B * H > 1 && B * H * T * T * hd >= (1 << 20))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H, kvh = h / group;
    std::vector<float> p(static_cast<size_t>(kb));
    std::vector<float> dst(static_cast<size_t>(hd)), blk(static_cast<size_t>(hd));
    for (int64_t i = 0; i < T; ++i) {
      const float* qi = q + ((b * T + i) * H + h) * hd;
      const int64_t lo = vis.Lo(b, i);
      float m = kNegInf, l = 0;
      std::fill(dst.begin(), dst.end(), 0.0f);
      for (int64_t n0 = 0; n0 <= i; n0 += kb) {
        const int64_t len = std::min(kb, T - n0);
        const int64_t j0 = std::max(n0, lo), j1 = std::min(n0 + len, i + 1);
        // A block with no visible key leaves m, l and dst as they are (its exp values are 0).
        if (j0 >= j1) continue;
        float bm = kNegInf;
        std::fill(p.begin(), p.end(), 0.0f);
        for (int64_t j = j0; j < j1; ++j) {
          const float sj = Dot(qi, k + ((b * T + j) * KV + kvh) * hd, hd) * scale;
          p[static_cast<size_t>(j - n0)] = sj;
          bm = std::max(bm, sj);
        }
        const float m_new = std::max(m, bm);
        for (int64_t j = j0; j < j1; ++j) {
          float& pj = p[static_cast<size_t>(j - n0)];
          pj = FastExp(pj - m_new);
        }
        const float exp_old = std::exp(m - m_new);  // 0 while m is −inf
        l = BlockRowSum(p.data(), len) + exp_old * l;
        std::fill(blk.begin(), blk.end(), 0.0f);
        for (int64_t j = j0; j < j1; ++j) {
          const float pr = R(p[static_cast<size_t>(j - n0)]);
          const float* vj = v + ((b * T + j) * KV + kvh) * hd;
          for (int64_t d = 0; d < hd; ++d) blk[d] += pr * vj[d];
        }
        for (int64_t d = 0; d < hd; ++d) dst[d] = blk[d] + dst[d] * exp_old;
        m = m_new;
      }
      float* oi = out + ((b * T + i) * H + h) * hd;
      const float recip = 1.0f / l;
      for (int64_t d = 0; d < hd; ++d) oi[d] = R(dst[d] * recip);
      lse[(b * H + h) * T + i] = m + std::log(l);
    }
  }
}

void FsdpAttentionBackward(const AttentionShape& s, const float* q, const float* k,
                           const float* v, const float* out, const float* lse, const float* dout,
                           float* dq, float* dk, float* dv) {
  ValidateAttentionShape(s);
  ProfileScope profile_scope(ProfileCategory::kAttention);
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, group = H / KV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const int64_t qb = QueryBlock(T), kb = KeyBlock(T);
  const Visibility vis = MakeVisibility(s);
  // Per query head (the repeated k and v's heads): dq, dk, dv [T, hd], bf16 values.
  const size_t per_head = static_cast<size_t>(T * hd);
  std::vector<float> gq(static_cast<size_t>(B * H) * per_head),
      gk(static_cast<size_t>(B * H) * per_head), gv(static_cast<size_t>(B * H) * per_head);
#pragma omp parallel for schedule(dynamic, 1) if (B * H > 1 && B * H * T * T * hd >= (1 << 20))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H, kvh = h / group;
    float* gqh = gq.data() + static_cast<size_t>(bh) * per_head;
    float* gkh = gk.data() + static_cast<size_t>(bh) * per_head;
    float* gvh = gv.data() + static_cast<size_t>(bh) * per_head;
    std::fill_n(gqh, per_head, 0.0f);
    std::fill_n(gkh, per_head, 0.0f);
    std::fill_n(gvh, per_head, 0.0f);
    auto Q = [&](int64_t i) { return q + ((b * T + i) * H + h) * hd; };
    auto K = [&](int64_t j) { return k + ((b * T + j) * KV + kvh) * hd; };
    auto Vr = [&](int64_t j) { return v + ((b * T + j) * KV + kvh) * hd; };
    auto DO = [&](int64_t i) { return dout + ((b * T + i) * H + h) * hd; };
    std::vector<float> dsum(static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i) dsum[i] = Dot(DO(i), out + ((b * T + i) * H + h) * hd, hd);
    // This head's keys and values transposed, [hd, T], so the score and dO·V blocks are ordered
    // GEMMs whose columns are keys.
    std::vector<float> kt(static_cast<size_t>(hd * T)), vt(static_cast<size_t>(hd * T));
    for (int64_t j = 0; j < T; ++j)
      for (int64_t d = 0; d < hd; ++d) {
        kt[static_cast<size_t>(d * T + j)] = K(j)[d];
        vt[static_cast<size_t>(d * T + j)] = Vr(j)[d];
      }
    std::vector<float> S(static_cast<size_t>(qb * kb)), G(static_cast<size_t>(qb * kb));
    std::vector<float> P(static_cast<size_t>(qb * kb)), dS(static_cast<size_t>(qb * kb));
    std::vector<float> part(static_cast<size_t>(std::max(qb, kb) * hd));
    const int64_t qs = H * hd, ks = KV * hd;  // row strides of q / dout and of k / v
    for (int64_t m0 = 0; m0 < T; m0 += qb) {
      const int64_t rows = std::min(qb, T - m0);
      for (int64_t n0 = 0; n0 < m0 + rows; n0 += kb) {
        const int64_t len = std::min(kb, T - n0);
        // S = q·k and G = dO·v of every pair of the block, each an fp32 dot in index order.
        OrderedGemmRows(SumOrder::kIndex, rows, len, hd, Q(m0), qs, 1, kt.data() + n0, T,
                        S.data(), kb);
        OrderedGemmRows(SumOrder::kIndex, rows, len, hd, DO(m0), qs, 1, vt.data() + n0, T,
                        G.data(), kb);
        bool any = false;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = m0 + r, lo = vis.Lo(b, i);
          const float li = lse[(b * H + h) * T + i];
          for (int64_t c = 0; c < len; ++c) {
            const int64_t j = n0 + c;
            const size_t at = static_cast<size_t>(r * kb + c);
            float p = 0, ds = 0;
            if (j >= lo && j <= i) {
              p = std::exp(S[at] * scale - li);
              ds = p * (G[at] - dsum[i]);
              any = true;
            }
            P[at] = R(p);
            dS[at] = R(ds);
          }
        }
        // A (query block, key block) pair with no visible pair adds exact zeros.
        if (!any) continue;
        // dv += Pᵀ·dO and dk += scale·dSᵀ·q over the block's queries, dq += scale·dS·k over its
        // keys: sums in the pair order, each rounded into the bf16 gradient.
        OrderedGemmRows(SumOrder::kPair, len, hd, rows, P.data(), 1, kb, DO(m0), qs, part.data(),
                        hd);
        for (int64_t c = 0; c < len; ++c)
          for (int64_t d = 0; d < hd; ++d) {
            float& g = gvh[(n0 + c) * hd + d];
            g = R(g + part[static_cast<size_t>(c * hd + d)]);
          }
        OrderedGemmRows(SumOrder::kPair, len, hd, rows, dS.data(), 1, kb, Q(m0), qs, part.data(),
                        hd);
        for (int64_t c = 0; c < len; ++c)
          for (int64_t d = 0; d < hd; ++d) {
            float& g = gkh[(n0 + c) * hd + d];
            g = R(g + scale * part[static_cast<size_t>(c * hd + d)]);
          }
        OrderedGemmRows(SumOrder::kPair, rows, hd, len, dS.data(), kb, 1, K(n0), ks, part.data(),
                        hd);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t d = 0; d < hd; ++d) {
            float& g = gqh[(m0 + r) * hd + d];
            g = R(g + scale * part[static_cast<size_t>(r * hd + d)]);
          }
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      float* dqt = dq + ((b * T + t) * H + h) * hd;
      for (int64_t d = 0; d < hd; ++d) dqt[d] = R(dqt[d] + gqh[t * hd + d]);
    }
  }
  // The repeat's backward: kv head g's gradient is the fp32 sum of its query heads', rounded.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < KV; ++g)
        for (int64_t d = 0; d < hd; ++d) {
          float sk = 0, sv = 0;
          for (int64_t r = 0; r < group; ++r) {
            const size_t at =
                static_cast<size_t>(b * H + g * group + r) * per_head + static_cast<size_t>(t * hd + d);
            sk += gk[at];
            sv += gv[at];
          }
          const size_t o = static_cast<size_t>(((b * T + t) * KV + g) * hd + d);
          dk[o] = R(dk[o] + R(sk));
          dv[o] = R(dv[o] + R(sv));
        }
}

}  // namespace replica
