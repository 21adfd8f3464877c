// ZeRO-1 AdamW over R = 1, 2, 4 ranks (threads) gives the parameters, m, v and step count of the
// single-process AdamW bit for bit, and its state moves between world sizes through full buffers
// (what checkpoints hold).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "parallel/collectives.h"
#include "parallel/thread_group.h"
#include "parallel/zero1.h"
#include "train/grad_accum.h"
#include "optim/adamw.h"

namespace replica::parallel {
namespace {

ParamLayout SmallLayout() {
  ParamLayout l;
  l.Add("model.embed_tokens.weight", {64, 48});   // no weight decay
  l.Add("model.layers.0.mlp.up_proj.weight", {80, 48});
  l.Add("model.norm.weight", {48});
  l.Add("lm_head.weight", {64, 48});
  return l;
}

// Gradient of micro-batch j at step s: deterministic, varied magnitudes.
FlatBuffer Leaf(const ParamLayout& layout, int64_t step, int64_t j) {
  FlatBuffer g(layout.total_floats());
  std::mt19937 rng(static_cast<uint32_t>(step * 131 + j));
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (const auto& v : layout.views()) {
    for (size_t i = 0; i < v.numel; ++i) {
      g.data()[v.offset + i] = n(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 12) - 6);
    }
  }
  return g;
}

FlatBuffer InitParams(const ParamLayout& layout) {
  FlatBuffer p(layout.total_floats());
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.0f, 0.02f);
  for (const auto& v : layout.views()) {
    for (size_t i = 0; i < v.numel; ++i) p.data()[v.offset + i] = n(rng);
  }
  return p;
}

struct Result {
  FlatBuffer params, m, v;
  std::vector<double> norms;
  int64_t t = 0;
};

constexpr int64_t kMicroBatches = 8;
constexpr int kSteps = 4;
AdamWConfig Config() {
  AdamWConfig c;
  c.max_grad_norm = 0.5;  // clipping active
  return c;
}

Result SingleProcess(const ParamLayout& layout) {
  Result res;
  res.params = InitParams(layout);
  AdamW opt(layout, Config());
  for (int s = 0; s < kSteps; ++s) {
    TreeAccumulator acc(layout.total_floats(), kMicroBatches);
    FlatBuffer g;
    for (int64_t j : MicroBatchOrder(kMicroBatches)) {
      g = Leaf(layout, s, j);
      acc.Add(g, {});
    }
    const double norm = GlobalGradNorm(g);
    res.norms.push_back(norm);
    opt.Step(res.params, g, 1e-2 * (s + 1), ClipCoefficient(norm, Config().max_grad_norm));
  }
  res.m = FlatBuffer(layout.total_floats());
  res.v = FlatBuffer(layout.total_floats());
  std::memcpy(res.m.data(), opt.m().data(), opt.m().size() * sizeof(float));
  std::memcpy(res.v.data(), opt.v().data(), opt.v().size() * sizeof(float));
  res.t = opt.step();
  return res;
}

// Runs steps [first, last) on `world` ranks starting from `start` (params, m, v, t).
Result Distributed(const ParamLayout& layout, int world, const Result& start, int first, int last) {
  Result res;
  std::mutex mu;
  RunThreadGroup(world, [&](Communicator& comm) {
    FlatBuffer params(layout.total_floats());
    std::memcpy(params.data(), start.params.data(), params.size() * sizeof(float));
    Zero1AdamW opt(layout, Config(), comm);
    opt.LoadState(start.m, start.v, start.t);
    std::vector<double> norms;
    const int64_t local = kMicroBatches / world;
    for (int s = first; s < last; ++s) {
      TreeAccumulator acc(layout.total_floats(), local);
      FlatBuffer g;
      for (int64_t q : MicroBatchOrder(local)) {
        g = Leaf(layout, s, comm.rank() + world * q);
        acc.Add(g, {});
      }
      const double norm = opt.ReduceGradients(g);
      norms.push_back(norm);
      opt.Step(params, g, 1e-2 * (s + 1), ClipCoefficient(norm, Config().max_grad_norm));
    }
    FlatBuffer m_full, v_full;
    if (comm.rank() == 0) {
      m_full = FlatBuffer(layout.total_floats());
      v_full = FlatBuffer(layout.total_floats());
    }
    opt.GatherState(&m_full, &v_full);
    std::lock_guard<std::mutex> lock(mu);
    if (comm.rank() == 0) {
      res.params = std::move(params);
      res.m = std::move(m_full);
      res.v = std::move(v_full);
      res.norms = norms;
      res.t = opt.step();
    } else {
      // Every rank ends with the same parameters (all-gathered).
      EXPECT_EQ(norms.size(), static_cast<size_t>(last - first));
    }
  });
  return res;
}

void ExpectSame(const FlatBuffer& a, const FlatBuffer& b, const char* what, int world) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
      << what << " differ with world " << world;
}

TEST(Zero1AdamW, BitIdenticalToSingleProcessForAnyWorld) {
  const ParamLayout layout = SmallLayout();
  const Result want = SingleProcess(layout);
  Result start;
  start.params = InitParams(layout);
  start.m = FlatBuffer(layout.total_floats());
  start.v = FlatBuffer(layout.total_floats());
  for (int world : {1, 2, 4, 8}) {
    const Result got = Distributed(layout, world, start, 0, kSteps);
    ExpectSame(got.params, want.params, "params", world);
    ExpectSame(got.m, want.m, "Adam m", world);
    ExpectSame(got.v, want.v, "Adam v", world);
    EXPECT_EQ(got.t, want.t);
    ASSERT_EQ(got.norms.size(), want.norms.size());
    for (size_t i = 0; i < want.norms.size(); ++i) {
      EXPECT_EQ(std::memcmp(&got.norms[i], &want.norms[i], sizeof(double)), 0) << world;
    }
  }
}

// Two steps on 4 ranks, gather the state (as a checkpoint would), continue on 1 rank: the same as
// four steps on 4 ranks, and as four in one process.
TEST(Zero1AdamW, StateMovesBetweenWorldSizes) {
  const ParamLayout layout = SmallLayout();
  const Result want = SingleProcess(layout);
  Result start;
  start.params = InitParams(layout);
  start.m = FlatBuffer(layout.total_floats());
  start.v = FlatBuffer(layout.total_floats());
  const Result half = Distributed(layout, 4, start, 0, 2);
  const Result rest = Distributed(layout, 1, half, 2, kSteps);
  const Result rest2 = Distributed(layout, 2, half, 2, kSteps);
  ExpectSame(rest.params, want.params, "params after 4 -> 1", 1);
  ExpectSame(rest.m, want.m, "Adam m after 4 -> 1", 1);
  ExpectSame(rest2.v, want.v, "Adam v after 4 -> 2", 2);
}

TEST(Zero1AdamW, ShardsSplitTheOptimizerState) {
  const ParamLayout layout = SmallLayout();
  std::mutex mu;
  size_t total = 0;
  RunThreadGroup(4, [&](Communicator& comm) {
    Zero1AdamW opt(layout, Config(), comm);
    std::lock_guard<std::mutex> lock(mu);
    total += opt.shard_end() - opt.shard_begin();
    EXPECT_LE(opt.shard_end() - opt.shard_begin(), Zero1ShardFloats(layout.total_floats(), 4));
  });
  EXPECT_EQ(total, layout.total_floats());
}

}  // namespace
}  // namespace replica::parallel
