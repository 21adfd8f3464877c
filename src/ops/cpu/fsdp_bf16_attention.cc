// Attention as torch's CPU flash kernel computes it on bf16 tensors (fsdp_bf16.h). One (b, query
// head) pair per task, each row's keys visited in the kernel's blocks; every output element is
// owned by one task and summed in a fixed order, so results do not depend on the thread count.
// The scalar loops are the reference and the implementation: this mode exists to follow torch's
// roundings, not for speed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/profile.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/fsdp_bf16.h"
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

float Dot(const float* a, const float* b, int64_t n) {
  float acc = 0;
  for (int64_t d = 0; d < n; ++d) acc += a[d] * b[d];
  return acc;
}

}  // namespace

void FsdpAttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                          float* out, float* lse) {
  ValidateAttentionShape(s);
  ProfileScope profile_scope(ProfileCategory::kAttention);
  const int64_t B = s.B, T = s.T, H = s.H, KV = s.KV, hd = s.hd, group = H / KV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const Visibility vis = MakeVisibility(s);
#pragma omp parallel for schedule(dynamic, 1) if (B * H > 1 && B * H * T * T * hd >= (1 << 20))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H, kvh = h / group;
    std::vector<float> scores(static_cast<size_t>(kFsdpAttentionKeyBlock));
    std::vector<float> acc(static_cast<size_t>(hd));
    for (int64_t i = 0; i < T; ++i) {
      const float* qi = q + ((b * T + i) * H + h) * hd;
      const int64_t lo = vis.Lo(b, i);
      float m = kNegInf, l = 0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t c0 = 0; c0 <= i; c0 += kFsdpAttentionKeyBlock) {
        const int64_t j0 = std::max(c0, lo), j1 = std::min(c0 + kFsdpAttentionKeyBlock, i + 1);
        if (j0 >= j1) continue;  // a wholly masked block changes neither m, l nor acc
        float bm = kNegInf;
        for (int64_t j = j0; j < j1; ++j) {
          const float sj = Dot(qi, k + ((b * T + j) * KV + kvh) * hd, hd) * scale;
          scores[static_cast<size_t>(j - j0)] = sj;
          bm = std::max(bm, sj);
        }
        const float m_new = std::max(m, bm);
        const float alpha = m == kNegInf ? 0.0f : std::exp(m - m_new);
        float block_sum = 0;
        for (float& d : acc) d *= alpha;
        for (int64_t j = j0; j < j1; ++j) {
          const float p = std::exp(scores[static_cast<size_t>(j - j0)] - m_new);
          block_sum += p;
          const float pr = R(p);
          const float* vj = v + ((b * T + j) * KV + kvh) * hd;
          for (int64_t d = 0; d < hd; ++d) acc[d] += pr * vj[d];
        }
        l = l * alpha + block_sum;
        m = m_new;
      }
      float* oi = out + ((b * T + i) * H + h) * hd;
      for (int64_t d = 0; d < hd; ++d) oi[d] = R(acc[d] / l);
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
  const Visibility vis = MakeVisibility(s);
  // Per query head: its rounded dk, dv [T, hd] (the repeated k, v's gradients), summed per kv
  // head afterwards.
  std::vector<float> dk_h(static_cast<size_t>(B * H * T * hd)),
      dv_h(static_cast<size_t>(B * H * T * hd));
#pragma omp parallel for schedule(dynamic, 1) if (B * H > 1 && B * H * T * T * hd >= (1 << 20))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H, kvh = h / group;
    std::vector<float> dq_acc(static_cast<size_t>(T * hd), 0.0f),
        dk_acc(static_cast<size_t>(T * hd), 0.0f), dv_acc(static_cast<size_t>(T * hd), 0.0f);
    for (int64_t i = 0; i < T; ++i) {
      const float* qi = q + ((b * T + i) * H + h) * hd;
      const float* oi = out + ((b * T + i) * H + h) * hd;
      const float* doi = dout + ((b * T + i) * H + h) * hd;
      const float delta = Dot(doi, oi, hd);
      const float li = lse[(b * H + h) * T + i];
      float* dqi = dq_acc.data() + i * hd;
      for (int64_t j = vis.Lo(b, i); j <= i; ++j) {
        const float* kj = k + ((b * T + j) * KV + kvh) * hd;
        const float* vj = v + ((b * T + j) * KV + kvh) * hd;
        const float p = std::exp(Dot(qi, kj, hd) * scale - li);
        const float ds = p * (Dot(doi, vj, hd) - delta);
        const float pr = R(p), dsr = R(ds);
        float* dkj = dk_acc.data() + j * hd;
        float* dvj = dv_acc.data() + j * hd;
        for (int64_t d = 0; d < hd; ++d) {
          dqi[d] += dsr * kj[d];
          dkj[d] += dsr * qi[d];
          dvj[d] += pr * doi[d];
        }
      }
    }
    for (int64_t t = 0; t < T; ++t) {
      float* dqt = dq + ((b * T + t) * H + h) * hd;
      for (int64_t d = 0; d < hd; ++d) {
        const size_t at = static_cast<size_t>(t * hd + d);
        dqt[d] = R(dqt[d] + R(dq_acc[at] * scale));
        dk_h[static_cast<size_t>(bh * T * hd) + at] = R(dk_acc[at] * scale);
        dv_h[static_cast<size_t>(bh * T * hd) + at] = R(dv_acc[at]);
      }
    }
  }
  // The repeat's backward: kv head g's gradient is the fp32 sum of its query heads', rounded.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t g = 0; g < KV; ++g)
        for (int64_t d = 0; d < hd; ++d) {
          float sk = 0, sv = 0;
          for (int64_t r = 0; r < group; ++r) {
            const size_t at = static_cast<size_t>(((b * H + g * group + r) * T + t) * hd + d);
            sk += dk_h[at];
            sv += dv_h[at];
          }
          const size_t o = static_cast<size_t>(((b * T + t) * KV + g) * hd + d);
          dk[o] = R(dk[o] + R(sk));
          dv[o] = R(dv[o] + R(sv));
        }
}

}  // namespace replica
