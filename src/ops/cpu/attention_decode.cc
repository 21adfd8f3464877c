#include "ops/cpu/attention_decode.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "ops/cpu/bf16_round.h"

namespace replica {

namespace {

// The operand as the product takes it: itself, or rounded to bf16.
template <bool kBf16>
inline float Operand(float x) {
  if constexpr (kBf16) return RoundToBf16(x);
  return x;
}

// Keys [first, first + n) of the ring cache, every head. fp32: each probability normalised before
// it weights v. bf16: q, k, v and the unnormalised exp(s − max) rounded, the sum divided at the end.
template <bool kBf16>
void DecodeHeads(const DecodeAttentionShape& s, const float* q, const float* k_cache,
                 const float* v_cache, float* out, float* scores, int64_t first, int64_t n) {
  const int64_t H = s.H, KV = s.KV, hd = s.hd, KVd = KV * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
#pragma omp parallel for schedule(static) if (H * n * hd >= (int64_t{1} << 15))
  for (int64_t head = 0; head < H; ++head) {
    const int64_t kvh = head / (H / KV);
    float* sc = scores + head * s.capacity;
    float* o = out + head * hd;
    // The query as the products take it, held in this head's output row until P·v starts.
    for (int64_t d = 0; d < hd; ++d) o[d] = Operand<kBf16>(q[head * hd + d]);
    float mx = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      const float* kj = k_cache + ((first + j) % s.capacity) * KVd + kvh * hd;
      float dot = 0;
      for (int64_t d = 0; d < hd; ++d) dot += o[d] * Operand<kBf16>(kj[d]);
      sc[j] = dot * scale;
      mx = std::max(mx, sc[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      sc[j] = std::exp(sc[j] - mx);
      sum += sc[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    std::fill(o, o + hd, 0.0f);
    for (int64_t j = 0; j < n; ++j) {
      const float* vj = v_cache + ((first + j) % s.capacity) * KVd + kvh * hd;
      const float pj = kBf16 ? RoundToBf16(sc[j]) : sc[j] * inv;
      for (int64_t d = 0; d < hd; ++d) o[d] += pj * Operand<kBf16>(vj[d]);
    }
    if constexpr (kBf16)
      for (int64_t d = 0; d < hd; ++d) o[d] = static_cast<float>(o[d] / sum);
  }
}

}  // namespace

void AttentionDecode(const DecodeAttentionShape& s, const float* q, const float* k_cache,
                     const float* v_cache, float* out, float* scores, Precision precision) {
  const int64_t H = s.H, KV = s.KV, hd = s.hd;
  const int64_t first = s.window > 0 ? std::max<int64_t>(0, s.pos - s.window + 1) : 0;
  const int64_t n = s.pos - first + 1;
  Require(H >= 1 && KV >= 1 && H % KV == 0 && hd >= 1 && s.pos >= 0,
          "AttentionDecode: invalid shape (H={}, KV={}, hd={}, pos={})", H, KV, hd, s.pos);
  Require(n <= s.capacity, "AttentionDecode: position {} sees {} keys, the cache holds {}", s.pos,
          n, s.capacity);
  if (precision == Precision::kBf16)
    return DecodeHeads<true>(s, q, k_cache, v_cache, out, scores, first, n);
  DecodeHeads<false>(s, q, k_cache, v_cache, out, scores, first, n);
}

}  // namespace replica
