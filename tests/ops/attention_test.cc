// Attention: the tiled fast path against the scalar reference (forward out and lse, backward dq,
// dk, dv) across head layouts, window edges and tile-crossing sizes; the reference's gradients
// against finite differences in double; the visible key set of every query; every SIMD target the
// build dispatches to; bit-identical results across thread counts and backward schemes; and
// errors for bad shapes.
#include "ops/cpu/attention.h"

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

namespace replica {
namespace {

std::vector<float> Random(size_t n, uint32_t seed, float amplitude = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, amplitude);
  std::vector<float> x(n);
  for (float& e : x) e = dist(rng);
  return x;
}

struct Tensors {
  explicit Tensors(const AttentionShape& s, uint32_t seed, float qk_amplitude = 1.0f)
      : qsize(s.B * s.T * s.H * s.hd), kvsize(s.B * s.T * s.KV * s.hd) {
    q = Random(qsize, seed + 1, qk_amplitude);
    k = Random(kvsize, seed + 2, qk_amplitude);
    v = Random(kvsize, seed + 3);
    dout = Random(qsize, seed + 4);
    // Backward accumulates: start the gradients from non-zero values.
    dq0 = Random(qsize, seed + 5, 0.1f);
    dk0 = Random(kvsize, seed + 6, 0.1f);
    dv0 = Random(kvsize, seed + 7, 0.1f);
  }
  size_t qsize, kvsize;
  std::vector<float> q, k, v, dout, dq0, dk0, dv0;
};

struct Result {
  std::vector<float> out, lse, dq, dk, dv;
};

enum class Impl { kReference, kFast };

Result RunAttention(const AttentionShape& s, const Tensors& t, Impl impl,
                    AttentionBackwardScheme scheme = AttentionBackwardScheme::kAuto) {
  Result r;
  r.out.assign(t.qsize, 0.0f);
  r.lse.assign(s.B * s.H * s.T, 0.0f);
  r.dq = t.dq0;
  r.dk = t.dk0;
  r.dv = t.dv0;
  if (impl == Impl::kReference) {
    AttentionForwardReference(s, t.q.data(), t.k.data(), t.v.data(), r.out.data(), r.lse.data());
    AttentionBackwardReference(s, t.q.data(), t.k.data(), t.v.data(), r.out.data(), r.lse.data(),
                               t.dout.data(), r.dq.data(), r.dk.data(), r.dv.data());
  } else {
    AttentionForward(s, t.q.data(), t.k.data(), t.v.data(), r.out.data(), r.lse.data());
    AttentionBackwardWithScheme(s, t.q.data(), t.k.data(), t.v.data(), r.out.data(), r.lse.data(),
                                t.dout.data(), r.dq.data(), r.dk.data(), r.dv.data(), scheme);
  }
  return r;
}

// Largest |a - b| relative to the largest |b| (normwise: elements near zero don't dominate).
double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

bool BitIdentical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string Describe(const AttentionShape& s) {
  return "B=" + std::to_string(s.B) + " T=" + std::to_string(s.T) + " H=" + std::to_string(s.H) +
         " KV=" + std::to_string(s.KV) + " hd=" + std::to_string(s.hd) +
         " window=" + std::to_string(s.window);
}

struct Case {
  const char* name;
  AttentionShape shape;
};

const Case kCases[] = {
    {"mha_full_T37", {1, 37, 2, 2, 16, 0}},
    {"mha_batch2_T129_hd64", {2, 129, 2, 2, 64, 0}},
    {"gqa_h6_kv2", {1, 100, 6, 2, 16, 32}},
    {"gqa_h6_kv2_batch2_full", {2, 129, 6, 2, 16, 0}},
    {"mqa_batch2", {2, 70, 4, 1, 16, 0}},
    {"mqa_window", {1, 129, 3, 1, 16, 40}},
    {"T1_full", {1, 1, 2, 1, 16, 0}},
    {"T1_window", {2, 1, 2, 2, 16, 4}},
    {"T_below_window", {1, 50, 2, 2, 16, 64}},
    {"T_equals_window", {1, 64, 2, 2, 16, 64}},
    {"T_above_window", {1, 200, 2, 2, 16, 64}},
    {"window_1", {1, 70, 2, 2, 16, 1}},
    {"window_2", {1, 70, 2, 1, 16, 2}},
    {"window_not_tile_multiple", {2, 300, 2, 1, 32, 130}},
    {"hd64_window", {1, 129, 2, 1, 64, 50}},
    {"hd24_odd", {1, 65, 3, 3, 24, 10}},
    {"hd8", {1, 66, 2, 2, 8, 0}},
    {"hd128_long_window", {1, 260, 2, 2, 128, 128}},
};

TEST(Attention, FastMatchesReference) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.name) + " " + Describe(c.shape));
    // Two input scales: softmax near uniform and sharply peaked.
    for (float amplitude : {1.0f, 3.0f}) {
      const Tensors t(c.shape, 17, amplitude);
      const Result ref = RunAttention(c.shape, t, Impl::kReference);
      const Result fast = RunAttention(c.shape, t, Impl::kFast);
      EXPECT_LT(MaxRelativeError(fast.out, ref.out), 1e-5) << "out, amplitude " << amplitude;
      EXPECT_LT(MaxRelativeError(fast.lse, ref.lse), 1e-5) << "lse, amplitude " << amplitude;
      EXPECT_LT(MaxRelativeError(fast.dq, ref.dq), 2e-5) << "dq, amplitude " << amplitude;
      EXPECT_LT(MaxRelativeError(fast.dk, ref.dk), 2e-5) << "dk, amplitude " << amplitude;
      EXPECT_LT(MaxRelativeError(fast.dv, ref.dv), 1e-5) << "dv, amplitude " << amplitude;
    }
  }
}

// The fast path dispatches at run time to the best SIMD target; check each compiled target that
// this CPU runs (scalar, SSSE3, SSE4, AVX2, AVX-512 on x86), not only the best one.
TEST(Attention, EverySimdTargetMatchesReference) {
  const AttentionShape shapes[] = {
      {1, 130, 2, 1, 24, 50}, {2, 129, 6, 2, 64, 70}, {1, 70, 2, 2, 16, 0}};
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (const AttentionShape& s : shapes) {
      SCOPED_TRACE(std::string(hwy::TargetName(target)) + " " + Describe(s));
      const Tensors t(s, 53, 2.0f);
      const Result ref = RunAttention(s, t, Impl::kReference);
      const Result fast = RunAttention(s, t, Impl::kFast, AttentionBackwardScheme::kPerKvHead);
      const Result two_pass = RunAttention(s, t, Impl::kFast, AttentionBackwardScheme::kTwoPass);
      EXPECT_LT(MaxRelativeError(fast.out, ref.out), 1e-5);
      EXPECT_LT(MaxRelativeError(fast.lse, ref.lse), 1e-5);
      EXPECT_LT(MaxRelativeError(fast.dq, ref.dq), 2e-5);
      EXPECT_LT(MaxRelativeError(fast.dk, ref.dk), 2e-5);
      EXPECT_LT(MaxRelativeError(fast.dv, ref.dv), 1e-5);
      EXPECT_TRUE(BitIdentical(fast.dq, two_pass.dq));
      EXPECT_TRUE(BitIdentical(fast.dk, two_pass.dk));
      EXPECT_TRUE(BitIdentical(fast.dv, two_pass.dv));
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(Attention, BackwardSchemesAreBitIdentical) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.name) + " " + Describe(c.shape));
    const Tensors t(c.shape, 29);
    const Result a = RunAttention(c.shape, t, Impl::kFast, AttentionBackwardScheme::kPerKvHead);
    const Result b = RunAttention(c.shape, t, Impl::kFast, AttentionBackwardScheme::kTwoPass);
    EXPECT_TRUE(BitIdentical(a.dq, b.dq));
    EXPECT_TRUE(BitIdentical(a.dk, b.dk));
    EXPECT_TRUE(BitIdentical(a.dv, b.dv));
  }
}

TEST(Attention, BitIdenticalForOneAndTwoThreads) {
  // B·KV = 1 and 3 make the automatic backward scheme differ between 1 and 2 threads.
  const AttentionShape shapes[] = {{4, 300, 4, 2, 64, 128},  // per-kv-head units for both
                                   {1, 200, 4, 1, 32, 0},    // MQA, B·KV = 1
                                   {3, 150, 2, 1, 16, 70}};  // B·KV = 3
  for (const AttentionShape& s : shapes) {
    SCOPED_TRACE(Describe(s));
    const Tensors t(s, 41);
    SetNumThreads(1);
    const Result one = RunAttention(s, t, Impl::kFast);
    SetNumThreads(2);
    const Result two = RunAttention(s, t, Impl::kFast);
    SetNumThreads(0);
    EXPECT_TRUE(BitIdentical(one.out, two.out));
    EXPECT_TRUE(BitIdentical(one.lse, two.lse));
    EXPECT_TRUE(BitIdentical(one.dq, two.dq));
    EXPECT_TRUE(BitIdentical(one.dk, two.dk));
    EXPECT_TRUE(BitIdentical(one.dv, two.dv));
  }
}

TEST(Attention, RepeatedCallsAreBitIdentical) {
  const AttentionShape s{2, 150, 4, 2, 32, 60};
  const Tensors t(s, 43);
  const Result a = RunAttention(s, t, Impl::kFast);
  const Result b = RunAttention(s, t, Impl::kFast);
  EXPECT_TRUE(BitIdentical(a.out, b.out));
  EXPECT_TRUE(BitIdentical(a.dq, b.dq));
  EXPECT_TRUE(BitIdentical(a.dk, b.dk));
  EXPECT_TRUE(BitIdentical(a.dv, b.dv));
}

// With q = 0 every visible key gets the same weight 1/n, and v = one-hot(position) makes output
// channel j equal to key j's weight: so the output row lists exactly which keys the query sees.
TEST(Attention, QuerySeesExactlyMinOfIPlusOneAndWindowKeys) {
  const int64_t T = 150;
  for (int64_t window : {int64_t{0}, int64_t{1}, int64_t{64}, int64_t{70}, int64_t{149},
                         int64_t{150}, int64_t{200}}) {
    const AttentionShape s{1, T, 2, 1, T, window};
    std::vector<float> q(s.T * s.H * s.hd, 0.0f), k = Random(s.T * s.KV * s.hd, 5);
    std::vector<float> v(s.T * s.KV * s.hd, 0.0f);
    for (int64_t j = 0; j < T; ++j) v[j * s.hd + j] = 1.0f;
    for (Impl impl : {Impl::kReference, Impl::kFast}) {
      SCOPED_TRACE("window " + std::to_string(window) +
                   (impl == Impl::kFast ? " fast" : " reference"));
      std::vector<float> out(q.size()), lse(s.H * s.T);
      if (impl == Impl::kFast) {
        AttentionForward(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      } else {
        AttentionForwardReference(s, q.data(), k.data(), v.data(), out.data(), lse.data());
      }
      int bad = 0;
      for (int64_t h = 0; h < s.H; ++h) {
        for (int64_t i = 0; i < T; ++i) {
          const int64_t n = window > 0 ? std::min(i + 1, window) : i + 1;
          const float* row = out.data() + (i * s.H + h) * s.hd;
          int64_t seen = 0;
          for (int64_t j = 0; j < T; ++j) {
            const bool visible = j <= i && j > i - n;
            if (row[j] > 0) ++seen;
            const float expected = visible ? 1.0f / static_cast<float>(n) : 0.0f;
            if (std::fabs(row[j] - expected) > 1e-6f && bad++ < 5) {
              ADD_FAILURE() << "query " << i << " key " << j << ": weight " << row[j]
                            << ", expected " << expected;
            }
          }
          EXPECT_EQ(seen, n) << "query " << i;
          EXPECT_NEAR(lse[h * T + i], std::log(static_cast<double>(n)), 1e-5) << "query " << i;
        }
      }
    }
  }
}

// L = Σ out ∘ G on double storage: the reference backward's gradients equal central differences.
TEST(Attention, ReferenceBackwardMatchesFiniteDifferences) {
  for (const AttentionShape& s :
       {AttentionShape{1, 7, 4, 2, 4, 3}, AttentionShape{2, 6, 2, 1, 3, 0},
        AttentionShape{1, 5, 2, 2, 4, 1}}) {
    SCOPED_TRACE(Describe(s));
    const size_t qsize = s.B * s.T * s.H * s.hd, kvsize = s.B * s.T * s.KV * s.hd;
    std::mt19937 rng(7);
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
    const double eps = 1e-6;
    auto check = [&](std::vector<double>& x, const std::vector<double>& grad, const char* name) {
      for (size_t i = 0; i < x.size(); ++i) {
        const double saved = x[i];
        x[i] = saved + eps;
        const double up = loss();
        x[i] = saved - eps;
        const double down = loss();
        x[i] = saved;
        const double fd = (up - down) / (2 * eps);
        EXPECT_NEAR(grad[i], fd, 1e-8 * std::max(1.0, std::fabs(fd))) << name << "[" << i << "]";
      }
    };
    check(q, dq, "dq");
    check(k, dk, "dk");
    check(v, dv, "dv");
  }
}

TEST(Attention, BadShapesAreErrors) {
  std::vector<float> buf(64, 0.0f);
  const AttentionShape bad[] = {{1, 4, 3, 2, 4, 0},   // H not a multiple of KV
                                {1, 4, 2, 2, 4, -1},  // negative window
                                {1, 4, 2, 2, 0, 0},   // hd 0
                                {0, 4, 2, 2, 4, 0}};  // B 0
  for (const AttentionShape& s : bad) {
    SCOPED_TRACE(Describe(s));
    EXPECT_THROW(AttentionForward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
                 Error);
    EXPECT_THROW(AttentionBackward(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data(),
                                   buf.data(), buf.data(), buf.data(), buf.data()),
                 Error);
    EXPECT_THROW(
        AttentionForwardReference(s, buf.data(), buf.data(), buf.data(), buf.data(), buf.data()),
        Error);
  }
}

TEST(Attention, VisiblePairs) {
  EXPECT_EQ(AttentionVisiblePairs(4, 0), 1 + 2 + 3 + 4);
  EXPECT_EQ(AttentionVisiblePairs(5, 2), 1 + 2 + 2 + 2 + 2);
  EXPECT_EQ(AttentionVisiblePairs(1024, 512), 512 * 513 / 2 + 512 * 512);
}

}  // namespace
}  // namespace replica
