// Intra-document masking (AttentionShape::cu_doc_lens): a packed row is the same computation as
// its documents run alone. The scalar reference gives bit-identical results either way; the fast
// path (fp32 and bf16, forward and backward, both backward schemes, every SIMD target) agrees with
// the reference, is bit-identical to its own per-document runs when documents start on tile
// boundaries, and visits only tiles that hold a visible pair. Invalid document lengths are errors.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "ops/cpu/attention.h"

namespace replica {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float amplitude = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, amplitude);
  std::vector<float> x(n);
  for (float& e : x) e = dist(rng);
  return x;
}

// cu_doc_lens of rows whose document lengths are given row by row (each row sums to T).
std::vector<int32_t> Cumulative(const std::vector<std::vector<int32_t>>& rows) {
  std::vector<int32_t> cu{0};
  for (const auto& row : rows) {
    for (int32_t len : row) cu.push_back(cu.back() + len);
  }
  return cu;
}

struct Inputs {
  Inputs(const AttentionShape& s, uint32_t seed, float amplitude = 1.5f)
      : q(Random(s.B * s.T * s.H * s.hd, seed + 1, amplitude)),
        k(Random(s.B * s.T * s.KV * s.hd, seed + 2, amplitude)),
        v(Random(s.B * s.T * s.KV * s.hd, seed + 3)),
        dout(Random(s.B * s.T * s.H * s.hd, seed + 4)) {}
  std::vector<float> q, k, v, dout;
};

struct PackedCaseWindow {
  int64_t window;
};

struct Outputs {
  std::vector<float> out, lse, dq, dk, dv;
};

enum class Impl { kReference, kFast };

Outputs RunAttention(const AttentionShape& s, const Inputs& x, Impl impl,
            Precision p = Precision::kFp32,
            AttentionBackwardScheme scheme = AttentionBackwardScheme::kAuto) {
  Outputs o;
  o.out.assign(x.q.size(), 0.0f);
  o.lse.assign(s.B * s.H * s.T, 0.0f);
  o.dq.assign(x.q.size(), 0.0f);
  o.dk.assign(x.k.size(), 0.0f);
  o.dv.assign(x.v.size(), 0.0f);
  if (impl == Impl::kReference) {
    AttentionForwardReference(s, x.q.data(), x.k.data(), x.v.data(), o.out.data(), o.lse.data(),
                              p);
    AttentionBackwardReference(s, x.q.data(), x.k.data(), x.v.data(), o.out.data(), o.lse.data(),
                               x.dout.data(), o.dq.data(), o.dk.data(), o.dv.data());
  } else {
    AttentionForward(s, x.q.data(), x.k.data(), x.v.data(), o.out.data(), o.lse.data(), p);
    AttentionBackwardWithScheme(s, x.q.data(), x.k.data(), x.v.data(), o.out.data(),
                                o.lse.data(), x.dout.data(), o.dq.data(), o.dk.data(),
                                o.dv.data(), scheme, p);
  }
  return o;
}

// Each document of the packed shape run alone (B = 1, T = its length, no masking), its outputs
// put back where the packed call writes them.
Outputs RunDocumentsAlone(const AttentionShape& packed, const Inputs& x, Impl impl,
                          Precision p = Precision::kFp32) {
  Outputs all;
  all.out.assign(x.q.size(), 0.0f);
  all.lse.assign(packed.B * packed.H * packed.T, 0.0f);
  all.dq.assign(x.q.size(), 0.0f);
  all.dk.assign(x.k.size(), 0.0f);
  all.dv.assign(x.v.size(), 0.0f);
  const int64_t qw = packed.H * packed.hd, kw = packed.KV * packed.hd;
  for (int64_t d = 0; d + 1 < packed.num_cu_doc_lens; ++d) {
    const int64_t c0 = packed.cu_doc_lens[d], len = packed.cu_doc_lens[d + 1] - c0;
    if (len == 0) continue;
    const AttentionShape one{1, len, packed.H, packed.KV, packed.hd, packed.window};
    Inputs doc = x;
    doc.q.assign(x.q.begin() + c0 * qw, x.q.begin() + (c0 + len) * qw);
    doc.dout.assign(x.dout.begin() + c0 * qw, x.dout.begin() + (c0 + len) * qw);
    doc.k.assign(x.k.begin() + c0 * kw, x.k.begin() + (c0 + len) * kw);
    doc.v.assign(x.v.begin() + c0 * kw, x.v.begin() + (c0 + len) * kw);
    const Outputs o = RunAttention(one, doc, impl, p);
    std::copy(o.out.begin(), o.out.end(), all.out.begin() + c0 * qw);
    std::copy(o.dq.begin(), o.dq.end(), all.dq.begin() + c0 * qw);
    std::copy(o.dk.begin(), o.dk.end(), all.dk.begin() + c0 * kw);
    std::copy(o.dv.begin(), o.dv.end(), all.dv.begin() + c0 * kw);
    const int64_t b = c0 / packed.T, t0 = c0 % packed.T;
    for (int64_t h = 0; h < packed.H; ++h) {
      for (int64_t t = 0; t < len; ++t) {
        all.lse[(b * packed.H + h) * packed.T + t0 + t] = o.lse[h * len + t];
      }
    }
  }
  return all;
}

bool BitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void ExpectBitIdentical(const Outputs& a, const Outputs& b) {
  EXPECT_TRUE(BitIdentical(a.out, b.out)) << "out";
  EXPECT_TRUE(BitIdentical(a.lse, b.lse)) << "lse";
  EXPECT_TRUE(BitIdentical(a.dq, b.dq)) << "dq";
  EXPECT_TRUE(BitIdentical(a.dk, b.dk)) << "dk";
  EXPECT_TRUE(BitIdentical(a.dv, b.dv)) << "dv";
}

double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b);

double MaxAbs(const std::vector<float>& a) {
  double m = 0;
  for (float x : a) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

// dq, dk against the reference: relative, except with a window of 1, where each query sees one
// key, the softmax is constant and the exact dq, dk are 0 (the computed ones are rounding noise).
void ExpectDqDkNear(const PackedCaseWindow& w, const Outputs& fast, const Outputs& ref,
                    double tol) {
  if (w.window == 1) {
    EXPECT_LT(MaxAbs(fast.dq), tol);  // inputs are O(1): tol as an absolute bound
    EXPECT_LT(MaxAbs(fast.dk), tol);
    EXPECT_LT(MaxAbs(ref.dq), 1e-5);
    return;
  }
  EXPECT_LT(MaxRelativeError(fast.dq, ref.dq), tol);
  EXPECT_LT(MaxRelativeError(fast.dk, ref.dk), tol);
}

double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

struct PackedCase {
  const char* name;
  int64_t H, KV, hd, window;
  std::vector<std::vector<int32_t>> rows;  // document lengths, row by row
};

// Mixed lengths: single tokens, documents inside one tile, across tile edges, longer than the
// window, and a row that is one document.
const std::vector<PackedCase>& Cases() {
  static const std::vector<PackedCase> cases = {
      {"full_mixed", 2, 1, 16, 0, {{1, 5, 64, 1, 100, 29}, {200}}},
      {"window3", 4, 2, 16, 3, {{1, 2, 3, 4, 60, 1, 129}, {100, 100}}},
      {"window40_gqa", 6, 2, 16, 40, {{70, 1, 1, 58, 70}, {1, 199}}},
      {"window64_mqa", 3, 1, 24, 64, {{130, 1, 69}, {64, 64, 72}}},
      {"window130_hd64", 2, 2, 64, 130, {{150, 50}, {7, 193}}},
      {"window1", 2, 1, 8, 1, {{3, 197}, {200}}},
  };
  return cases;
}

struct Packed {
  std::vector<int32_t> cu;
  AttentionShape shape;
  Packed(const PackedCase& c) : cu(Cumulative(c.rows)) {
    int64_t T = 0;
    for (int32_t len : c.rows[0]) T += len;
    shape = {static_cast<int64_t>(c.rows.size()), T, c.H, c.KV, c.hd, c.window};
    shape.cu_doc_lens = cu.data();
    shape.num_cu_doc_lens = static_cast<int64_t>(cu.size());
  }
};

TEST(AttentionDocuments, ReferencePackedIsBitIdenticalToDocumentsAlone) {
  for (const PackedCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Packed p(c);
    const Inputs x(p.shape, 11);
    ExpectBitIdentical(RunAttention(p.shape, x, Impl::kReference),
                       RunDocumentsAlone(p.shape, x, Impl::kReference));
  }
}

TEST(AttentionDocuments, FastMatchesReference) {
  for (const PackedCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Packed p(c);
    for (float amplitude : {1.0f, 3.0f}) {
      const Inputs x(p.shape, 13, amplitude);
      const Outputs ref = RunAttention(p.shape, x, Impl::kReference);
      const Outputs fast = RunAttention(p.shape, x, Impl::kFast);
      EXPECT_LT(MaxRelativeError(fast.out, ref.out), 1e-5) << "amplitude " << amplitude;
      EXPECT_LT(MaxRelativeError(fast.lse, ref.lse), 1e-5);
      ExpectDqDkNear({c.window}, fast, ref, 2e-5);
      EXPECT_LT(MaxRelativeError(fast.dv, ref.dv), 1e-5);
    }
  }
}

TEST(AttentionDocuments, BackwardSchemesThreadsAndTargetsAreBitIdentical) {
  for (const PackedCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Packed p(c);
    const Inputs x(p.shape, 17);
    for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
      SetNumThreads(1);
      const Outputs base =
          RunAttention(p.shape, x, Impl::kFast, prec, AttentionBackwardScheme::kPerKvHead);
      SetNumThreads(2);
      ExpectBitIdentical(base, RunAttention(p.shape, x, Impl::kFast, prec));
      ExpectBitIdentical(base,
                         RunAttention(p.shape, x, Impl::kFast, prec, AttentionBackwardScheme::kTwoPass));
      SetNumThreads(0);
    }
  }
  // Every compiled SIMD target this CPU runs, against the reference.
  const Packed p(Cases()[2]);
  const Inputs x(p.shape, 19);
  const Outputs ref = RunAttention(p.shape, x, Impl::kReference);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    const Outputs fast = RunAttention(p.shape, x, Impl::kFast);
    EXPECT_LT(MaxRelativeError(fast.out, ref.out), 1e-5);
    EXPECT_LT(MaxRelativeError(fast.dq, ref.dq), 2e-5);
    EXPECT_LT(MaxRelativeError(fast.dk, ref.dk), 2e-5);
    EXPECT_LT(MaxRelativeError(fast.dv, ref.dv), 1e-5);
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Documents that start on 64-token tile boundaries meet the same tiles, in the same order, as
// when run alone, so the fast path's packed results are its per-document results, bit for bit.
TEST(AttentionDocuments, FastPackedIsBitIdenticalToDocumentsAloneOnTileBoundaries) {
  const PackedCase aligned[] = {
      {"full", 2, 1, 16, 0, {{64, 128, 64, 37}, {256, 37}}},
      {"window70", 4, 2, 32, 70, {{192, 64, 37}, {64, 64, 64, 101}}},
  };
  for (const PackedCase& c : aligned) {
    SCOPED_TRACE(c.name);
    const Packed p(c);
    const Inputs x(p.shape, 23);
    for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
      ExpectBitIdentical(RunAttention(p.shape, x, Impl::kFast, prec),
                         RunDocumentsAlone(p.shape, x, Impl::kFast, prec));
    }
  }
}

// One document per row, given explicitly, is the unmasked computation: the same bits.
TEST(AttentionDocuments, OneDocumentPerRowIsTheUnmaskedResult) {
  for (int64_t window : {int64_t{0}, int64_t{50}}) {
    const AttentionShape plain{3, 150, 4, 2, 32, window};
    const std::vector<int32_t> cu{0, 150, 300, 450};
    AttentionShape rows = plain;
    rows.cu_doc_lens = cu.data();
    rows.num_cu_doc_lens = 4;
    const Inputs x(plain, 29);
    for (Precision prec : {Precision::kFp32, Precision::kBf16}) {
      SCOPED_TRACE("window " + std::to_string(window));
      ExpectBitIdentical(RunAttention(plain, x, Impl::kFast, prec), RunAttention(rows, x, Impl::kFast, prec));
    }
    ExpectBitIdentical(RunAttention(plain, x, Impl::kReference), RunAttention(rows, x, Impl::kReference));
  }
}

TEST(AttentionDocuments, Bf16FastMatchesBf16Reference) {
  for (const PackedCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    const Packed p(c);
    const Inputs x(p.shape, 31, 1.0f);
    const Outputs fast = RunAttention(p.shape, x, Impl::kFast, Precision::kBf16);
    std::vector<float> out(x.q.size()), lse(p.shape.B * p.shape.H * p.shape.T);
    AttentionForwardReference(p.shape, x.q.data(), x.k.data(), x.v.data(), out.data(),
                              lse.data(), Precision::kBf16);
    EXPECT_LT(MaxRelativeError(fast.lse, lse), 1e-5);
    EXPECT_LT(MaxRelativeError(fast.out, out), 4e-3);  // P rounded at the running max
    const Outputs exact = RunAttention(p.shape, x, Impl::kReference);
    ExpectDqDkNear({c.window}, fast, exact, 3e-2);
    EXPECT_LT(MaxRelativeError(fast.dv, exact.dv), 3e-2);
  }
}

// q = 0 gives every visible key weight 1/n; v = one-hot(position) makes the output row list the
// keys a query sees: exactly those of its document within the window.
TEST(AttentionDocuments, QuerySeesExactlyItsDocumentWithinTheWindow) {
  const int64_t T = 140;
  const std::vector<int32_t> cu = Cumulative({{1, 63, 2, 70, 4}});
  for (int64_t window : {int64_t{0}, int64_t{5}, int64_t{64}}) {
    AttentionShape s{1, T, 2, 1, T, window};
    s.cu_doc_lens = cu.data();
    s.num_cu_doc_lens = static_cast<int64_t>(cu.size());
    std::vector<float> q(T * s.H * s.hd, 0.0f), k = Random(T * s.hd, 5), v(T * s.hd, 0.0f);
    for (int64_t j = 0; j < T; ++j) v[j * s.hd + j] = 1.0f;
    for (Impl impl : {Impl::kReference, Impl::kFast}) {
      SCOPED_TRACE("window " + std::to_string(window) +
                   (impl == Impl::kFast ? " fast" : " reference"));
      std::vector<float> out(q.size()), lse(s.H * T);
      if (impl == Impl::kFast) {
        AttentionForward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      } else {
        AttentionForwardReference(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      }
      int bad = 0;
      for (int64_t i = 0; i < T; ++i) {
        int64_t start = 0;
        for (size_t d = 0; d + 1 < cu.size(); ++d) {
          if (cu[d] <= i && i < cu[d + 1]) start = cu[d];
        }
        if (window > 0) start = std::max(start, i - window + 1);
        const int64_t n = i - start + 1;
        for (int64_t h = 0; h < s.H; ++h) {
          const float* row = out.data() + (i * s.H + h) * s.hd;
          for (int64_t j = 0; j < T; ++j) {
            const float expected = (start <= j && j <= i) ? 1.0f / static_cast<float>(n) : 0.0f;
            if (std::fabs(row[j] - expected) > 1e-6f && bad++ < 5) {
              ADD_FAILURE() << "query " << i << " key " << j << ": weight " << row[j]
                            << ", expected " << expected;
            }
          }
          EXPECT_NEAR(lse[h * T + i], std::log(static_cast<double>(n)), 1e-5);
        }
      }
    }
  }
}

// L = Σ out ∘ G on double storage: the masked reference's gradients equal central differences.
TEST(AttentionDocuments, ReferenceBackwardMatchesFiniteDifferences) {
  const std::vector<int32_t> cu = Cumulative({{1, 3, 4}, {2, 1, 5}});
  for (int64_t window : {int64_t{0}, int64_t{2}}) {
    AttentionShape s{2, 8, 4, 2, 3, window};
    s.cu_doc_lens = cu.data();
    s.num_cu_doc_lens = static_cast<int64_t>(cu.size());
    const size_t qsize = s.B * s.T * s.H * s.hd, kvsize = s.B * s.T * s.KV * s.hd;
    std::mt19937 rng(3);
    std::normal_distribution<double> dist(0.0, 1.0);
    auto random = [&](size_t n) {
      std::vector<double> x(n);
      for (double& e : x) e = dist(rng);
      return x;
    };
    std::vector<double> q = random(qsize), k = random(kvsize), v = random(kvsize),
                        G = random(qsize);
    std::vector<double> out(qsize), lse(s.B * s.H * s.T);
    auto loss = [&]() {
      AttentionForwardReference(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      double sum = 0;
      for (size_t i = 0; i < qsize; ++i) sum += out[i] * G[i];
      return sum;
    };
    loss();
    std::vector<double> dq(qsize, 0.0), dk(kvsize, 0.0), dv(kvsize, 0.0);
    AttentionBackwardReference(s, q.data(), k.data(), v.data(), out.data(), lse.data(), G.data(),
                               dq.data(), dk.data(), dv.data());
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
      for (size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i], eps = 1e-6;
        x[i] = saved + eps;
        const double up = loss();
        x[i] = saved - eps;
        const double down = loss();
        x[i] = saved;
        const double fd = (up - down) / (2 * eps);
        EXPECT_NEAR(grad[i], fd, 1e-7 * std::max(1.0, std::fabs(fd))) << name << "[" << i << "]";
      }
    };
    check(q, dq, "dq");
    check(k, dk, "dk");
    check(v, dv, "dv");
  }
}

AttentionTilePairs Count(int64_t B, int64_t T, int64_t window, const std::vector<int32_t>* cu) {
  AttentionShape s{B, T, 1, 1, 8, window};
  if (cu != nullptr) {
    s.cu_doc_lens = cu->data();
    s.num_cu_doc_lens = static_cast<int64_t>(cu->size());
  }
  return CountAttentionTilePairs(s);
}

TEST(AttentionDocuments, OnlyTilesWithVisiblePairsAreVisited) {
  // Causal T = 256 is 1 + 2 + 3 + 4 tile pairs.
  EXPECT_EQ(Count(1, 256, 0, nullptr).forward, 10);
  // [0, 64), [64, 128), [128, 256): the diagonal tiles and the last document's square.
  const std::vector<int32_t> aligned = Cumulative({{64, 64, 128}});
  EXPECT_EQ(Count(1, 256, 0, &aligned).forward, 1 + 1 + 1 + 2);
  EXPECT_EQ(Count(1, 256, 0, &aligned).backward, 5);
  // [0, 100), [100, 256): query tile 1 still needs key tile 0, tiles 2 and 3 start at key tile 1.
  const std::vector<int32_t> cut = Cumulative({{100, 156}});
  EXPECT_EQ(Count(1, 256, 0, &cut).forward, 1 + 2 + 2 + 3);
  EXPECT_EQ(Count(1, 256, 0, &cut).backward, 8);
  // T = 8192, window 4096, documents of mixed lengths: forward and backward visit the same pairs,
  // no more than unmasked, and, with documents on tile boundaries, the sum over the documents.
  std::vector<std::vector<int32_t>> docs = {{1, 63, 1984, 4096, 64, 1024, 704, 192, 64}};
  const std::vector<int32_t> mixed = Cumulative(docs);
  const AttentionTilePairs packed = Count(1, 8192, 4096, &mixed);
  EXPECT_EQ(packed.forward, packed.backward);
  EXPECT_LT(packed.forward, Count(1, 8192, 4096, nullptr).forward);
  int64_t alone = 1;  // the first two documents share tile 0: one diagonal tile
  for (size_t d = 2; d < docs[0].size(); ++d) alone += Count(1, docs[0][d], 4096, nullptr).forward;
  EXPECT_EQ(packed.forward, alone);
}

TEST(AttentionDocuments, InvalidDocumentLengthsAreErrors) {
  std::vector<float> buf(4 * 2 * 2 * 4, 0.0f);
  const std::vector<std::vector<int32_t>> bad = {
      {0},           // one entry
      {1, 8},        // does not start at 0
      {0, 3, 7},     // does not end at B*T = 8
      {0, 5, 3, 8},  // decreasing
      {0, 3, 8},     // crosses the row start 4
  };
  for (const auto& cu : bad) {
    AttentionShape s{2, 4, 2, 2, 4, 0};
    s.cu_doc_lens = cu.data();
    s.num_cu_doc_lens = static_cast<int64_t>(cu.size());
    SCOPED_TRACE(::testing::PrintToString(cu));
    EXPECT_THROW(AttentionForward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
                 Error);
    EXPECT_THROW(AttentionBackward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data(),
                                   buf.data(), buf.data(), buf.data(), buf.data()),
                 Error);
    EXPECT_THROW(
        AttentionForwardReference(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
        Error);
  }
  AttentionShape s{2, 4, 2, 2, 4, 0};
  s.num_cu_doc_lens = 3;  // a count without the lengths
  EXPECT_THROW(AttentionForward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
               Error);
  // Empty documents and the row start among the entries are fine.
  const std::vector<int32_t> ok{0, 0, 4, 4, 6, 8};
  s.cu_doc_lens = ok.data();
  s.num_cu_doc_lens = static_cast<int64_t>(ok.size());
  EXPECT_NO_THROW(
      AttentionForward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()));
}

}  // namespace
}  // namespace replica
