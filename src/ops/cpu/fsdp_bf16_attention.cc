// Attention as torch's CPU flash kernel (aten/src/ATen/native/cpu/FlashAttentionKernel.cpp, its
// bf16 path) computes it (fsdp_bf16.h): the same query and key blocks, the same fp32 sums in the
// same orders where they decide a bf16 rounding, its fast exp in the forward, each as the
// TorchCpuPath followed builds it (ATen's own GEMM loops on AVX2, oneDNN's on AVX-512). One
// (b, query head) pair per task; every output element is owned by one task and summed in a fixed
// order, so results do not depend on the thread count. On the oneDNN path the backward's block
// products are ordered GEMMs (pair_order_gemm.h): SIMD across outputs, each output still one
// accumulator in its order.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/profile.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/fsdp_bf16.h"
#include "ops/cpu/isa.h"
#include "ops/cpu/pair_order_gemm.h"
#include "ops/cpu/torch_cross_entropy.h"
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

// The softmax scale as torch's sdp::calculate_scale forms it: 1/sqrt(head dim) in double, then
// rounded to float once.
float TorchScale(int64_t hd) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
}

// Σ a·b with one fp32 accumulator in index order (the kernel's fp32-output GEMMs and row sums).
float Dot(const float* a, const float* b, int64_t n) {
  float acc = 0;
  for (int64_t d = 0; d < n; ++d) acc += a[d] * b[d];
  return acc;
}

// Σ a·b in eight lanes (element d into lane d mod 8 over whole 8-element chunks), the lanes folded
// i + (i + 4), then + 2, + 1, the rest added one by one: the avx2 kind's forward scores for a
// query block of fewer than 4 queries (measured exact at head dims 16 and 24; at 64 and 128 the
// kernel's order is another, not found, and this one is the closer of those tried).
float EightLaneDot(const float* a, const float* b, int64_t n) {
  float lane[8] = {};
  const int64_t whole = n - n % 8;
  for (int64_t c = 0; c < whole; c += 8)
    for (int e = 0; e < 8; ++e) lane[e] += a[c + e] * b[c + e];
  for (int width = 4; width >= 1; width /= 2)
    for (int e = 0; e < width; ++e) lane[e] = lane[e] + lane[e + width];
  float acc = lane[0];
  for (int64_t d = whole; d < n; ++d) acc += a[d] * b[d];
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
// 16-element chunks, the lanes folded i + (i^8), then ^4, ^2, ^1, the tail added after, one by
// one. Where torch's fp32 vectors are 8 lanes (kReference: AVX2) the exp loop runs in 8-element
// chunks, a last 8-element chunk adds into lanes 0..7 before the fold and the tail is n % 8; on
// the oneDNN path (AVX-512, as measured there) the tail is n % 16.
float BlockRowSum(const float* p, int64_t n, TorchCpuPath path) {
  float lane[16] = {};
  const int64_t full16 = n - n % 16;
  const int64_t full8 = path == TorchCpuPath::kReference ? n - n % 8 : full16;
  for (int64_t c = 0; c < full16; c += 16)
    for (int k = 0; k < 16; ++k) lane[k] += p[c + k];
  for (int64_t j = full16; j < full8; ++j) lane[j - full16] += p[j];
  for (int width = 8; width >= 1; width /= 2)
    for (int k = 0; k < width; ++k) lane[k] = lane[k] + lane[k + width];
  float s = lane[0];
  for (int64_t j = full8; j < n; ++j) s += p[j];
  return s;
}

// Σ a·b as ATen's map2_reduce_all forms it on bf16 rows: the bf16 vector of `width` lanes is
// taken as two fp32 halves, each half accumulated over consecutive `width`-element chunks (a
// partial last chunk adds into its first lanes), the halves added lane by lane, then the fp32
// lanes folded in halves (i + (i ^ h/2), ... , ^1). A row shorter than one bf16 vector is
// summed lane by lane in order (its two halves added first where it spans both).
float VectorDotReduce(const float* a, const float* b, int64_t n, int64_t width) {
  const int64_t h = width / 2;
  float lane[32] = {};
  if (n < width) {
    for (int64_t i = 0; i < std::min(n, h); ++i) lane[i] = a[i] * b[i];
    for (int64_t i = h; i < n; ++i) lane[i - h] = lane[i - h] + a[i] * b[i];
    float acc = lane[0];
    for (int64_t i = 1; i < std::min(n, h); ++i) acc += lane[i];
    return acc;
  }
  float hi[32] = {};
  for (int64_t c = 0; c < n; c += width) {
    const int64_t m = std::min(width, n - c);
    for (int64_t i = 0; i < std::min(m, h); ++i) lane[i] += a[c + i] * b[c + i];
    for (int64_t i = h; i < m; ++i) hi[i - h] += a[c + i] * b[c + i];
  }
  for (int64_t i = 0; i < h; ++i) lane[i] = lane[i] + hi[i];
  for (int64_t w = h / 2; w >= 1; w /= 2)
    for (int64_t i = 0; i < w; ++i) lane[i] = lane[i] + lane[i + w];
  return lane[0];
}

// The kernel's block sizes, from the query length (the same forward and backward).
int64_t QueryBlock(int64_t T) {
  return std::min<int64_t>(T >= 768 ? 256 : T >= 192 ? 64 : 32, T);
}
int64_t KeyBlock(int64_t T) { return std::min(kFsdpAttentionKeyBlock, T); }

// Where the forward's P·V GEMM on the avx2 kind (bf16 operands, fp32 output) restarts its sum
// over the block's `len` keys, for a query block of `rows` queries: each piece is summed from
// zero in key order, then added into the output. Up to 192 keys, or fewer than 4 queries, one
// piece; up to 384 keys, two halves (the first len / 2 keys); beyond, pieces of 192 keys and the
// remainder (measured against torch's kernel: docs/bf16-fsdp-spec.md §9). The oneDNN path sums
// the block in one piece.
struct PvPieces {
  static constexpr int64_t kDepth = 192;
  static constexpr int kMax = 3;  // a key block of at most 3 · kDepth keys
  int64_t end[kMax];              // each piece's end; the first begins at 0
  int count;
};
static_assert(kFsdpAttentionKeyBlock <= PvPieces::kMax * PvPieces::kDepth);

PvPieces PvPiecesOf(int64_t len, int64_t rows, TorchCpuPath path) {
  constexpr int64_t kDepth = PvPieces::kDepth;
  if (path != TorchCpuPath::kReference || len <= kDepth || rows < 4) return {{len}, 1};
  if (len <= 2 * kDepth) return {{len / 2, len}, 2};
  PvPieces pieces{{}, 0};
  for (int64_t e = kDepth; e < len; e += kDepth) pieces.end[pieces.count++] = e;
  pieces.end[pieces.count++] = len;
  return pieces;
}

// The backward's scores as ATen's reference loop computes the block's scale · kᵀq: for each
// query, the keys' fp32 accumulators start at 0 and take, dimension by dimension in index order,
// q[d] · (k[d] · scale) in one fused multiply-add (torch's AVX2 build contracts the loop's
// multiply and add). kt is the head's keys transposed ([hd, ldk]), S is [rows, kb].
void ReferenceScores(int64_t rows, int64_t len, int64_t hd, float scale, const float* q,
                     int64_t qs, const float* kt, int64_t ldk, float* S, int64_t kb) {
  for (int64_t r = 0; r < rows; ++r) {
    float* s = S + r * kb;
    std::fill_n(s, len, 0.0f);
    for (int64_t d = 0; d < hd; ++d) {
      const float qd = q[r * qs + d];
      const float* kd = kt + d * ldk;
      for (int64_t c = 0; c < len; ++c) s[c] = std::fma(qd, kd[c] * scale, s[c]);
    }
  }
}

// One (query block, key block) pair's gradients, added into the bf16 gradients of the block's
// queries (gq, [rows, hd]) and keys (gk, gv, [len, hd]). P and dS are [rows, kb]; q and dO rows
// have stride qs, k rows ks.
//
// oneDNN's GEMMs: each product summed in the pair order, then R(old + product) (dq and dk with
// the product times scale).
void OneDnnBlockGradients(int64_t rows, int64_t len, int64_t hd, int64_t kb, float scale,
                          const float* P, const float* dS, const float* q, const float* dout,
                          int64_t qs, const float* k, int64_t ks, float* part, float* gq,
                          float* gk, float* gv) {
  OrderedGemmRows(SumOrder::kPair, len, hd, rows, P, 1, kb, dout, qs, part, hd);
  for (int64_t i = 0; i < len * hd; ++i) gv[i] = R(gv[i] + part[i]);
  OrderedGemmRows(SumOrder::kPair, len, hd, rows, dS, 1, kb, q, qs, part, hd);
  for (int64_t i = 0; i < len * hd; ++i) gk[i] = R(gk[i] + scale * part[i]);
  OrderedGemmRows(SumOrder::kPair, rows, hd, len, dS, kb, 1, k, ks, part, hd);
  for (int64_t i = 0; i < rows * hd; ++i) gq[i] = R(gq[i] + scale * part[i]);
}

// ATen's reference loops (CPUBlas.cpp, bf16 operands and output): dv and dk as gemm_transb_
// computes them, the bf16 gradient widened to fp32 and each query's term added in query order
// (dk's term q · (dS · scale), the scale applied to dS first, multiplied and added in one fused
// multiply-add as torch's AVX2 build compiles the loop), rounded once; dq as gemm_notrans_,
// the dot over the block's keys in four interleaved partial sums (key c into sum c mod 4 while
// whole groups of four remain, the rest into sum 0; then ((s0 + s1) + s2) + s3), then
// R(dq + scale · dot). `part` holds 4 · rows · hd floats.
void ReferenceBlockGradients(int64_t rows, int64_t len, int64_t hd, int64_t kb, float scale,
                             const float* P, const float* dS, const float* q, const float* dout,
                             int64_t qs, const float* k, int64_t ks, float* part, float* gq,
                             float* gk, float* gv) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* dor = dout + r * qs;
    const float* qr = q + r * qs;
    for (int64_t c = 0; c < len; ++c) {
      const float p = P[r * kb + c], ds = dS[r * kb + c] * scale;
      float* gvc = gv + c * hd;
      float* gkc = gk + c * hd;
      for (int64_t d = 0; d < hd; ++d) gvc[d] += p * dor[d];
      for (int64_t d = 0; d < hd; ++d) gkc[d] = std::fma(qr[d], ds, gkc[d]);
    }
  }
  for (int64_t i = 0; i < len * hd; ++i) {
    gv[i] = R(gv[i]);
    gk[i] = R(gk[i]);
  }
  const int64_t n = rows * hd, groups = len - len % 4;
  std::fill_n(part, 4 * n, 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < len; ++c) {
      const float ds = dS[r * kb + c];
      const float* kc = k + c * ks;
      float* acc = part + (c < groups ? c % 4 : 0) * n + r * hd;
      for (int64_t d = 0; d < hd; ++d) acc[d] += ds * kc[d];
    }
  for (int64_t i = 0; i < n; ++i) {
    const float dot = ((part[i] + part[n + i]) + part[2 * n + i]) + part[3 * n + i];
    gq[i] = R(gq[i] + scale * dot);
  }
}

}  // namespace

TorchCpuPath TorchCpuPathOnThisCpu() {
  return DetectCpu().avx512 ? TorchCpuPath::kOneDnn : TorchCpuPath::kReference;
}

namespace {
// -1: not set (this CPU's path); else a TorchCpuPath.
std::atomic<int> g_torch_cpu_path{-1};
}  // namespace

TorchCpuPath TorchCpuPathInUse() {
  const int set = g_torch_cpu_path.load(std::memory_order_relaxed);
  return set < 0 ? TorchCpuPathOnThisCpu() : static_cast<TorchCpuPath>(set);
}

void SetTorchCpuPath(TorchCpuPath path) {
  g_torch_cpu_path.store(static_cast<int>(path), std::memory_order_relaxed);
}

TorchCpuPath ResolveTorchCpuPath(const std::string& text, const std::string& what) {
  if (text == "auto") return TorchCpuPathOnThisCpu();
  if (text == "avx2") return TorchCpuPath::kReference;
  if (text == "avx512") return TorchCpuPath::kOneDnn;
  Fail("{}: expected auto, avx2 or avx512 (the CPU kind whose torch kernels bf16-fsdp follows), "
       "got '{}'",
       what, text);
}

const char* TorchCpuPathName(TorchCpuPath path) {
  return path == TorchCpuPath::kReference ? "avx2" : "avx512";
}

void FsdpAttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                          float* out, float* lse, TorchCpuPath path) {
  ValidateAttentionShape(s);
  ProfileScope profile_scope(ProfileCategory::kAttention);
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, group = H / KV;
  const float scale = TorchScale(hd);
  const int64_t qb = QueryBlock(T), kb = KeyBlock(T);
  const Visibility vis = MakeVisibility(s);
#pragma omp parallel for schedule(dynamic, 1) if (B * H > 1 && B * H * T * T * hd >= (1 << 20))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H, kvh = h / group;
    std::vector<float> p(static_cast<size_t>(kb));
    std::vector<float> dst(static_cast<size_t>(hd)), blk(static_cast<size_t>(hd));
    for (int64_t i = 0; i < T; ++i) {
      const float* qi = q + ((b * T + i) * H + h) * hd;
      const int64_t lo = vis.Lo(b, i);
      const int64_t block_rows = std::min(qb, T - i / qb * qb);  // queries in i's query block
      const bool few_rows = path == TorchCpuPath::kReference && block_rows < 4;
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
          const float* kj = k + ((b * T + j) * KV + kvh) * hd;
          const float sj = (few_rows ? EightLaneDot(qi, kj, hd) : Dot(qi, kj, hd)) * scale;
          p[static_cast<size_t>(j - n0)] = sj;
          bm = std::max(bm, sj);
        }
        const float m_new = std::max(m, bm);
        // The kernel's vector loop takes whole 8-element chunks of the block with the fast exp,
        // its scalar tail std::exp (kReference); on the oneDNN path every key the fast exp.
        const int64_t vector_end =
            path == TorchCpuPath::kReference ? n0 + len - len % 8 : n0 + len;
        for (int64_t j = j0; j < j1; ++j) {
          float& pj = p[static_cast<size_t>(j - n0)];
          pj = j < vector_end ? FastExp(pj - m_new) : std::exp(pj - m_new);
        }
        const float exp_old = std::exp(m - m_new);  // 0 while m is −inf
        // The kernel's scalar sum + exp_old · l, which torch's AVX2 and AVX-512 builds contract
        // into one fused multiply-add.
        l = std::fma(exp_old, l, BlockRowSum(p.data(), len, path));
        // dst ← dst · exp_old, then each piece of the block's keys summed from zero and added.
        const PvPieces pieces = PvPiecesOf(len, block_rows, path);
        for (int64_t d = 0; d < hd; ++d) dst[d] = dst[d] * exp_old;
        int64_t piece_begin = 0;
        for (int c = 0; c < pieces.count; ++c) {
          const int64_t piece_end = pieces.end[c];
          std::fill(blk.begin(), blk.end(), 0.0f);
          const int64_t a0 = std::max(j0, n0 + piece_begin), a1 = std::min(j1, n0 + piece_end);
          for (int64_t j = a0; j < a1; ++j) {
            const float pr = R(p[static_cast<size_t>(j - n0)]);
            const float* vj = v + ((b * T + j) * KV + kvh) * hd;
            for (int64_t d = 0; d < hd; ++d) blk[d] += pr * vj[d];
          }
          for (int64_t d = 0; d < hd; ++d) dst[d] = dst[d] + blk[d];
          piece_begin = piece_end;
        }
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
                           float* dq, float* dk, float* dv, TorchCpuPath path) {
  ValidateAttentionShape(s);
  ProfileScope profile_scope(ProfileCategory::kAttention);
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, group = H / KV;
  const float scale = TorchScale(hd);
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
    const int64_t lanes = path == TorchCpuPath::kReference ? 16 : 32;
    std::vector<float> dsum(static_cast<size_t>(T));
    for (int64_t i = 0; i < T; ++i)
      dsum[i] = VectorDotReduce(DO(i), out + ((b * T + i) * H + h) * hd, hd, lanes);
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
    std::vector<float> part(static_cast<size_t>(std::max(4 * qb, kb) * hd));
    const int64_t qs = H * hd, ks = KV * hd;  // row strides of q / dout and of k / v
    for (int64_t m0 = 0; m0 < T; m0 += qb) {
      const int64_t rows = std::min(qb, T - m0);
      for (int64_t n0 = 0; n0 < m0 + rows; n0 += kb) {
        const int64_t len = std::min(kb, T - n0);
        // S = the scaled q·k and G = dO·v of every pair of the block, each an fp32 dot in index
        // order (ATen's reference loop folds the scale into k and fuses each multiply-add).
        if (path == TorchCpuPath::kReference) {
          ReferenceScores(rows, len, hd, scale, Q(m0), qs, kt.data() + n0, T, S.data(), kb);
        } else {
          OrderedGemmRows(SumOrder::kIndex, rows, len, hd, Q(m0), qs, 1, kt.data() + n0, T,
                          S.data(), kb);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < len; ++c) S[r * kb + c] *= scale;
        }
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
              p = SleefExpF(S[at] - li);
              ds = p * (G[at] - dsum[i]);
              any = true;
            }
            P[at] = R(p);
            dS[at] = R(ds);
          }
        }
        // A (query block, key block) pair with no visible pair adds exact zeros.
        if (!any) continue;
        if (path == TorchCpuPath::kOneDnn)
          OneDnnBlockGradients(rows, len, hd, kb, scale, P.data(), dS.data(), Q(m0), DO(m0), qs,
                               K(n0), ks, part.data(), gqh + m0 * hd, gkh + n0 * hd,
                               gvh + n0 * hd);
        else
          ReferenceBlockGradients(rows, len, hd, kb, scale, P.data(), dS.data(), Q(m0), DO(m0),
                                  qs, K(n0), ks, part.data(), gqh + m0 * hd, gkh + n0 * hd,
                                  gvh + n0 * hd);
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
