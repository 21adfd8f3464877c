// AdamW, gradient norm and clipping on flat buffers, against a plain float64 transcription of the
// fixture README's update; the skip-step rule; the micro-batch reduction tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "core/error.h"
#include "core/pairwise_tree.h"
#include "ops/cpu/cpu_backend.h"
#include "core/threads.h"
#include "train/grad_accum.h"
#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "optim/skip_step.h"

namespace replica {
namespace {

ParamLayout SmallLayout() {
  ParamLayout l;
  l.Add("model.embed_tokens.weight", {7, 5});
  l.Add("model.layers.0.self_attn.q_norm.weight", {5});
  l.Add("lm_head.weight", {7, 5});
  return l;
}

void Fill(FlatBuffer& b, const ParamLayout& l, std::mt19937& rng, double scale) {
  std::normal_distribution<double> d(0, scale);
  for (const ParamView& v : l.views())
    for (float& x : b.View(v)) x = static_cast<float>(d(rng));
}

TEST(AdamW, MatchesFixtureFormulaInFloat64) {
  const ParamLayout l = SmallLayout();
  std::mt19937 rng(5);
  FlatBuffer p(l.total_floats());
  Fill(p, l, rng, 0.02);
  AdamWConfig cfg;  // 0.9, 0.95, 1e-8, wd 0.1, embedding excluded
  AdamW opt(l, cfg, CpuBackend());
  // Reference: everything in double, per the fixture README's loop.
  std::vector<double> rp(p.data(), p.data() + p.size()), rm(p.size(), 0), rv(p.size(), 0);
  const double lrs[] = {1e-3, 2e-3, 3e-3};
  for (int k = 0; k < 3; ++k) {
    FlatBuffer g(l.total_floats());
    Fill(g, l, rng, 1.0);
    const double norm = GlobalGradNorm(g, CpuBackend());
    const double coef = ClipCoefficient(norm, cfg.max_grad_norm);
    ASSERT_LT(coef, 1.0);
    opt.Step(p, g, lrs[k], coef);
    const int t = k + 1;
    for (const ParamView& v : l.views()) {
      const double wd = v.name == "model.embed_tokens.weight" ? 0.0 : 0.1;
      for (size_t i = v.offset; i < v.offset + v.numel; ++i) {
        const double gi = g.data()[i] * coef;
        rp[i] = rp[i] * (1 - lrs[k] * wd);
        rm[i] = 0.9 * rm[i] + (1 - 0.9) * gi;
        rv[i] = 0.95 * rv[i] + (1 - 0.95) * gi * gi;
        rp[i] = rp[i] - (lrs[k] / (1 - std::pow(0.9, t))) * rm[i] /
                            (std::sqrt(rv[i]) / std::sqrt(1 - std::pow(0.95, t)) + 1e-8);
      }
    }
  }
  EXPECT_EQ(opt.step(), 3);
  for (const ParamView& v : l.views())
    for (size_t i = v.offset; i < v.offset + v.numel; ++i)
      ASSERT_NEAR(p.data()[i], rp[i], 2e-8 + 1e-6 * std::fabs(rp[i])) << v.name << " " << i;
}

TEST(AdamW, EmbeddingRowWithoutGradientStaysPut) {
  const ParamLayout l = SmallLayout();
  FlatBuffer p(l.total_floats()), g(l.total_floats());
  for (size_t i = 0; i < p.size(); ++i) p.data()[i] = 0.5f;
  AdamW opt(l, AdamWConfig{}, CpuBackend());
  opt.Step(p, g, 1e-2, 1.0);
  for (float x : p.View(l.Get("model.embed_tokens.weight"))) EXPECT_EQ(x, 0.5f);
  // Decayed tensors shrink by exactly (1 - lr·wd) with a zero gradient.
  for (float x : p.View(l.Get("lm_head.weight")))
    EXPECT_EQ(x, static_cast<float>(0.5 * (1 - 1e-2 * 0.1)));
}

TEST(AdamW, UnknownNoDecayNameIsRefused) {
  const ParamLayout l = SmallLayout();
  AdamWConfig cfg;
  cfg.no_decay = {"model.embed.weight"};
  try {
    AdamW opt(l, cfg, CpuBackend());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.embed.weight"), std::string::npos);
  }
}

// Through the Optimizer interface: saving after two steps, loading into a fresh AdamW (as a
// checkpoint round trip does) and taking two more steps gives the bits of four uninterrupted steps.
TEST(AdamW, SaveLoadContinuesBitIdentically) {
  const ParamLayout l = SmallLayout();
  std::mt19937 rng(9);
  FlatBuffer p0(l.total_floats());
  Fill(p0, l, rng, 0.02);
  std::vector<FlatBuffer> grads;
  for (int k = 0; k < 4; ++k) {
    grads.emplace_back(l.total_floats());
    Fill(grads.back(), l, rng, 1.0);
  }
  auto copy = [](const FlatBuffer& b) {
    FlatBuffer c(b.size());
    std::memcpy(c.data(), b.data(), b.size() * sizeof(float));
    return c;
  };
  auto step = [&](Optimizer& opt, FlatBuffer& p, int k) {
    opt.Step(p, grads[static_cast<size_t>(k)], 1e-3 * (k + 1),
             ClipCoefficient(GlobalGradNorm(grads[static_cast<size_t>(k)], CpuBackend()), 1.0));
  };
  FlatBuffer want_p = copy(p0);
  AdamW straight(l, AdamWConfig{}, CpuBackend());
  for (int k = 0; k < 4; ++k) step(straight, want_p, k);

  FlatBuffer p = copy(p0);
  AdamW first(l, AdamWConfig{}, CpuBackend());
  for (int k = 0; k < 2; ++k) step(first, p, k);
  const OptimizerState* saved = first.SaveState();
  ASSERT_NE(saved, nullptr);
  EXPECT_EQ(saved->step, 2);
  AdamW second(l, AdamWConfig{}, CpuBackend());
  second.LoadState({copy(saved->m), copy(saved->v), saved->step});
  for (int k = 2; k < 4; ++k) step(second, p, k);

  EXPECT_EQ(second.step(), 4);
  EXPECT_EQ(std::memcmp(p.data(), want_p.data(), p.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(second.m().data(), straight.m().data(), p.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(second.v().data(), straight.v().data(), p.size() * sizeof(float)), 0);
}

TEST(AdamW, FreshStateIsZeroAndWrongSizesAreRefused) {
  const ParamLayout l = SmallLayout();
  AdamW opt(l, AdamWConfig{}, CpuBackend());
  const OptimizerState* s = opt.SaveState();
  ASSERT_EQ(s->m.size(), l.total_floats());
  EXPECT_EQ(s->step, 0);
  for (size_t i = 0; i < s->m.size(); ++i) ASSERT_EQ(s->m.data()[i] + s->v.data()[i], 0.0f);
  EXPECT_THROW(opt.LoadState({FlatBuffer(5), FlatBuffer(l.total_floats()), 1}), Error);
  AdamWConfig bad;
  bad.betas = {0.9};
  EXPECT_THROW({ AdamW refused(l, bad, CpuBackend()); }, Error);
}

TEST(GradNorm, FixedOrderAndThreadIndependent) {
  FlatBuffer g(3 * kNormBlock + 123);
  std::mt19937 rng(1);
  std::normal_distribution<double> d(0, 1);
  double ref = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    g.data()[i] = static_cast<float>(d(rng));
    ref += static_cast<double>(g.data()[i]) * g.data()[i];
  }
  SetNumThreads(1);
  const double n1 = GlobalGradNorm(g, CpuBackend());
  SetNumThreads(2);
  const double n2 = GlobalGradNorm(g, CpuBackend());
  EXPECT_EQ(n1, n2);
  EXPECT_NEAR(n1, std::sqrt(ref), 1e-9 * std::sqrt(ref));
  EXPECT_EQ(ClipCoefficient(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(ClipCoefficient(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_EQ(ClipCoefficient(100.0, 0.0), 1.0);
}

TEST(SkipStep, InactiveUntilMinHistoryThenSkipsOutliers) {
  SkipStepRule rule(SkipStepConfig{});
  // 62 recorded values: even a huge one is accepted (OLMo-core counts the current value: the
  // rule starts when 64 values including the current one exist).
  for (int i = 0; i < 62; ++i) ASSERT_TRUE(rule.Observe(3.0 + 0.01 * (i % 5), 1.0 + 0.01 * (i % 3)));
  EXPECT_TRUE(rule.Observe(1000.0, 1.0));  // 63rd value: still inactive
  // Rebuild a clean history of 63 values, then the 64th outlier is skipped.
  SkipStepRule r2(SkipStepConfig{});
  for (int i = 0; i < 63; ++i) ASSERT_TRUE(r2.Observe(3.0 + 0.01 * (i % 5), 1.0 + 0.01 * (i % 3)));
  SkipStepRule r3 = r2;
  EXPECT_FALSE(r2.Observe(3.5, 1.0));   // loss outlier
  EXPECT_FALSE(r3.Observe(3.0, 50.0));  // grad-norm outlier
  SkipStepRule r4 = r3;
  EXPECT_TRUE(r4.Observe(3.01, 1.01));
  EXPECT_FALSE(SkipStepRule(r4).Observe(NAN, 1.0));
  // Downward outliers are fine (one-sided rule).
  EXPECT_TRUE(SkipStepRule(r4).Observe(0.5, 0.01));
  EXPECT_EQ(r4.losses().size(), 65u);
  for (int i = 0; i < 100; ++i) r4.Observe(3.0, 1.0);
  EXPECT_EQ(r4.losses().size(), 128u);
  SkipStepRule r5(SkipStepConfig{});
  r5.Restore({r4.losses().begin(), r4.losses().end()},
             {r4.grad_norms().begin(), r4.grad_norms().end()});
  EXPECT_EQ(r5.losses(), r4.losses());
  EXPECT_EQ(r5.Observe(3.2, 1.0), SkipStepRule(r4).Observe(3.2, 1.0));
}

TEST(GradAccum, ResetReusesBuffers) {
  TreeAccumulator acc(8, 4, CpuBackend());
  FlatBuffer g(8);
  float first = 0;
  for (int round = 0; round < 3; ++round) {
    if (round) acc.Reset(4);
    for (int q = 0; q < 4; ++q) {
      for (size_t i = 0; i < 8; ++i) g.data()[i] = 0.1f * static_cast<float>(q + 1) + 1e-7f * i;
      acc.Add(g, {});
    }
    if (round == 0) first = g.data()[3];
    EXPECT_EQ(g.data()[3], first);
    EXPECT_EQ(acc.buffers_allocated(), 2u);
  }
}

// The accumulator allocates exactly the tree's spare buffers (what `replica plan` counts), and a
// replay of the binary counter (leaves push, equal levels merge, the last folds) never holds more.
TEST(GradAccum, SpareBuffersAreTheTreesDepth) {
  for (int64_t m = 1; m <= 70; ++m) {
    std::vector<int> stack;
    int64_t most = 0;
    for (int64_t q = 0; q + 1 < m; ++q) {
      int level = 0;
      while (!stack.empty() && stack.back() == level) {
        stack.pop_back();
        ++level;
      }
      stack.push_back(level);
      most = std::max<int64_t>(most, static_cast<int64_t>(stack.size()));
    }
    EXPECT_EQ(PairwiseTreeSpareBuffers(m), most) << "m " << m;
    TreeAccumulator acc(4, m, CpuBackend());
    EXPECT_EQ(acc.buffers_allocated(), static_cast<size_t>(most)) << "m " << m;
    FlatBuffer g(4);
    for (int64_t q = 0; q < m; ++q) {
      g.data()[0] = 1.0f;
      acc.Add(g, {});
    }
    EXPECT_EQ(g.data()[0], static_cast<float>(m));
    EXPECT_EQ(acc.buffers_allocated(), static_cast<size_t>(most)) << "m " << m;
  }
}

TEST(GradAccum, MicroBatchOrderAndPositions) {
  EXPECT_EQ(MicroBatchOrder(1), (std::vector<int64_t>{0}));
  EXPECT_EQ(MicroBatchOrder(8), (std::vector<int64_t>{0, 4, 2, 6, 1, 5, 3, 7}));
  EXPECT_EQ(MicroBatchOrder(3), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(MicroBatchPositions(1, 4, 3), (std::vector<int64_t>{1, 5, 9}));
}

TEST(GradAccum, TreeMatchesExplicitPairwiseSumAndIsRankDecomposable) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t m : {1, 2, 3, 5, 8}) {
    std::vector<std::vector<float>> leaves(static_cast<size_t>(m), std::vector<float>(40));
    for (auto& l : leaves)
      for (float& x : l) x = u(rng) * std::pow(10.0f, static_cast<float>(rng() % 6));
    TreeAccumulator acc(40, m, CpuBackend());
    FlatBuffer g(40);
    TreeAccumulator::Scalars s{};
    for (int64_t q = 0; q < m; ++q) {
      std::memcpy(g.data(), leaves[static_cast<size_t>(q)].data(), 40 * sizeof(float));
      s = acc.Add(g, {static_cast<double>(q), 1.0});
    }
    EXPECT_EQ(s[1], static_cast<double>(m));
    for (int i = 0; i < 40; ++i) {
      std::vector<double> col;
      for (auto& l : leaves) col.push_back(l[static_cast<size_t>(i)]);
      // Same tree in float arithmetic.
      std::function<float(size_t, size_t)> tf = [&](size_t lo, size_t hi) -> float {
        if (hi - lo == 1) return static_cast<float>(col[lo]);
        size_t p = 1;
        while (p * 2 < hi - lo) p *= 2;
        return tf(lo, lo + p) + tf(lo + p, hi);
      };
      ASSERT_EQ(g.data()[i], tf(0, col.size())) << "m " << m << " i " << i;
    }
    EXPECT_LE(acc.buffers_allocated(), static_cast<size_t>(std::ceil(std::log2(m)) + 1));
  }
  // Rank decomposition for M = 8 micro-batches: 2 ranks each summing its own micro-batches
  // (j ≡ r mod 2) in MicroBatchOrder(4), combined by one more addition, give the same bits.
  std::vector<float> leaf(8);
  for (float& x : leaf) x = u(rng) * 1000.0f;
  auto local = [&](const std::vector<int64_t>& ids) {
    TreeAccumulator acc(1, static_cast<int64_t>(ids.size()), CpuBackend());
    FlatBuffer g(1);
    for (int64_t k : MicroBatchOrder(static_cast<int64_t>(ids.size()))) {
      g.data()[0] = leaf[static_cast<size_t>(ids[static_cast<size_t>(k)])];
      acc.Add(g, {});
    }
    return g.data()[0];
  };
  const float whole = local({0, 1, 2, 3, 4, 5, 6, 7});
  const float two = local({0, 2, 4, 6}) + local({1, 3, 5, 7});
  const float four = (local({0, 4}) + local({2, 6})) + (local({1, 5}) + local({3, 7}));
  EXPECT_EQ(whole, two);
  EXPECT_EQ(whole, four);
}

}  // namespace
}  // namespace replica
