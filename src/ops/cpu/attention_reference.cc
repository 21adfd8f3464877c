// Scalar reference attention: one (b, head, query) row at a time, every visible score materialised,
// sums in double. Intra-document masking narrows each query's visible keys to its document's. Written for clarity, not speed; the fast path in attention.cc is tested against
// it and the float and double instances share this one template.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/bf16_round.h"
#include "ops/document_mask.h"

namespace replica {

void ValidateAttentionShape(const AttentionShape& s) {
  Require(s.B >= 1 && s.T >= 1 && s.H >= 1 && s.KV >= 1 && s.hd >= 1,
          "attention shape: B, T, H, KV and hd must be >= 1 (got B={}, T={}, H={}, KV={}, hd={})",
          s.B, s.T, s.H, s.KV, s.hd);
  Require(s.H % s.KV == 0, "attention shape: heads ({}) must be a multiple of kv heads ({})", s.H,
          s.KV);
  Require(s.window >= 0, "attention shape: window must be >= 0 (0 = full causal), got {}",
          s.window);
  if (s.cu_doc_lens != nullptr || s.num_cu_doc_lens != 0) {
    ValidateDocumentLengths(s.cu_doc_lens, s.num_cu_doc_lens, s.B, s.T);
  }
}

int64_t AttentionVisiblePairs(int64_t T, int64_t window) {
  int64_t pairs = 0;
  for (int64_t i = 0; i < T; ++i) pairs += (window > 0) ? std::min(i + 1, window) : i + 1;
  return pairs;
}

namespace {

struct Index {
  explicit Index(const AttentionShape& shape) : s(shape) {
    if (s.cu_doc_lens == nullptr) return;
    doc_start.resize(static_cast<size_t>(s.B * s.T));
    std::vector<int32_t> doc_end(doc_start.size());
    DocumentBounds(s.cu_doc_lens, s.num_cu_doc_lens, s.B, s.T, doc_start.data(), doc_end.data());
  }
  const AttentionShape& s;
  std::vector<int32_t> doc_start;  // [B*T] in-row start of each position's document, or empty
  int64_t Q(int64_t b, int64_t t, int64_t h) const { return ((b * s.T + t) * s.H + h) * s.hd; }
  int64_t KV(int64_t b, int64_t t, int64_t g) const { return ((b * s.T + t) * s.KV + g) * s.hd; }
  int64_t Lse(int64_t b, int64_t h, int64_t t) const { return (b * s.H + h) * s.T + t; }
  // First visible key of query i of row b (keys first..i are visible).
  int64_t First(int64_t b, int64_t i) const {
    const int64_t first = s.window > 0 ? std::max<int64_t>(0, i - s.window + 1) : 0;
    return doc_start.empty() ? first : std::max<int64_t>(first, doc_start[b * s.T + i]);
  }
};

// round_p: P·v takes exp(score − row max) rounded to bf16 (the running sum does not).
template <typename T>
void Forward(const AttentionShape& s, const T* q, const T* k, const T* v, T* out, T* lse,
             bool round_p = false) {
  ValidateAttentionShape(s);
  const Index ix(s);
  const int64_t group = s.H / s.KV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.hd));
  std::vector<double> score(s.T), acc(s.hd);
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < s.T; ++i) {
        const T* qi = q + ix.Q(b, i, h);
        const int64_t first = ix.First(b, i);
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = first; j <= i; ++j) {
          const T* kj = k + ix.KV(b, j, g);
          double dot = 0;
          for (int64_t d = 0; d < s.hd; ++d) dot += static_cast<double>(qi[d]) * kj[d];
          score[j] = dot * scale;
          max = std::max(max, score[j]);
        }
        double sum = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = first; j <= i; ++j) {
          const double p = std::exp(score[j] - max);
          sum += p;
          const double pv = round_p ? RoundToBf16(static_cast<float>(p)) : p;
          const T* vj = v + ix.KV(b, j, g);
          for (int64_t d = 0; d < s.hd; ++d) acc[d] += pv * vj[d];
        }
        T* oi = out + ix.Q(b, i, h);
        for (int64_t d = 0; d < s.hd; ++d) oi[d] = static_cast<T>(acc[d] / sum);
        lse[ix.Lse(b, h, i)] = static_cast<T>(max + std::log(sum));
      }
    }
  }
}

// With P = exp(S - lse) (the forward's probabilities), dP = dout · vᵀ and D_i = dout_i · out_i:
//   dS = P ∘ (dP − D),  dq = scale · dS k,  dk = scale · dSᵀ q,  dv = Pᵀ dout.
template <typename T>
void Backward(const AttentionShape& s, const T* q, const T* k, const T* v, const T* out,
              const T* lse, const T* dout, T* dq, T* dk, T* dv) {
  ValidateAttentionShape(s);
  const Index ix(s);
  const int64_t group = s.H / s.KV;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.hd));
  const int64_t qsize = s.B * s.T * s.H * s.hd, kvsize = s.B * s.T * s.KV * s.hd;
  // Gradients are summed in double and added to the caller's buffers once at the end.
  std::vector<double> gq(qsize, 0.0), gk(kvsize, 0.0), gv(kvsize, 0.0);
  for (int64_t b = 0; b < s.B; ++b) {
    for (int64_t h = 0; h < s.H; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < s.T; ++i) {
        const T* qi = q + ix.Q(b, i, h);
        const T* doi = dout + ix.Q(b, i, h);
        const T* oi = out + ix.Q(b, i, h);
        const double lse_i = lse[ix.Lse(b, h, i)];
        double D = 0;
        for (int64_t d = 0; d < s.hd; ++d) D += static_cast<double>(doi[d]) * oi[d];
        for (int64_t j = ix.First(b, i); j <= i; ++j) {
          const T* kj = k + ix.KV(b, j, g);
          const T* vj = v + ix.KV(b, j, g);
          double dot = 0, dp = 0;
          for (int64_t d = 0; d < s.hd; ++d) {
            dot += static_cast<double>(qi[d]) * kj[d];
            dp += static_cast<double>(doi[d]) * vj[d];
          }
          const double p = std::exp(dot * scale - lse_i);
          const double ds = p * (dp - D) * scale;
          double* gqi = gq.data() + ix.Q(b, i, h);
          double* gkj = gk.data() + ix.KV(b, j, g);
          double* gvj = gv.data() + ix.KV(b, j, g);
          for (int64_t d = 0; d < s.hd; ++d) {
            gqi[d] += ds * kj[d];
            gkj[d] += ds * qi[d];
            gvj[d] += p * doi[d];
          }
        }
      }
    }
  }
  for (int64_t x = 0; x < qsize; ++x) dq[x] = static_cast<T>(dq[x] + gq[x]);
  for (int64_t x = 0; x < kvsize; ++x) {
    dk[x] = static_cast<T>(dk[x] + gk[x]);
    dv[x] = static_cast<T>(dv[x] + gv[x]);
  }
}

}  // namespace

void AttentionForwardReference(const AttentionShape& s, const float* q, const float* k,
                               const float* v, float* out, float* lse, Precision precision) {
  if (precision == Precision::kFp32) return Forward(s, q, k, v, out, lse);
  ValidateAttentionShape(s);
  const int64_t nq = s.B * s.T * s.H * s.hd, nkv = s.B * s.T * s.KV * s.hd;
  std::vector<float> qr(q, q + nq), kr(k, k + nkv), vr(v, v + nkv);
  RoundToBf16(qr.data(), qr.data(), nq);
  RoundToBf16(kr.data(), kr.data(), nkv);
  RoundToBf16(vr.data(), vr.data(), nkv);
  Forward(s, qr.data(), kr.data(), vr.data(), out, lse, /*round_p=*/true);
}
void AttentionBackwardReference(const AttentionShape& s, const float* q, const float* k,
                                const float* v, const float* out, const float* lse,
                                const float* dout, float* dq, float* dk, float* dv) {
  Backward(s, q, k, v, out, lse, dout, dq, dk, dv);
}
void AttentionForwardReference(const AttentionShape& s, const double* q, const double* k,
                               const double* v, double* out, double* lse) {
  Forward(s, q, k, v, out, lse);
}
void AttentionBackwardReference(const AttentionShape& s, const double* q, const double* k,
                                const double* v, const double* out, const double* lse,
                                const double* dout, double* dq, double* dk, double* dv) {
  Backward(s, q, k, v, out, lse, dout, dq, dk, dv);
}

}  // namespace replica
