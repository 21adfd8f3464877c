// The sharded optimizer (parallel/sharded_optimizer.h) under both gather policies gives the
// parameters, m, v and step count of the single-process AdamW bit for bit: ZeRO-1
// (kAllGatherParams) over R = 1, 2, 4, 8 ranks (threads), ZeRO-3 (kGatherOnUse, owned-range
// buffers) over R = 1, 2, 3, 4; and its state moves between world sizes through full buffers
// (SaveState / LoadState: what checkpoints hold).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "optim/optimizer.h"
#include "parallel/collectives.h"
#include "parallel/thread_group.h"
#include "parallel/owner_collectives.h"
#include "parallel/sharded_optimizer.h"
#include "train/grad_accum.h"
#include "optim/adamw.h"
#include "optim/shard_bounds.h"

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

FlatBuffer Copy(const FlatBuffer& src) {
  FlatBuffer dst(src.size());
  std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
  return dst;
}

struct Result {
  FlatBuffer params, m, v;
  std::vector<double> norms;
  int64_t t = 0;
};

constexpr int64_t kMicroBatches = 8;
constexpr int kSteps = 4;
UpdateRuleConfig Config() {
  UpdateRuleConfig c;
  c.max_grad_norm = 0.5;  // clipping active
  return c;
}

ShardedOptimizer Zero1(const ParamLayout& layout, Communicator& comm) {
  return ShardedOptimizer(layout, MakeUpdateRule(layout, Config()),
                          GatherPolicy::kAllGatherParams, comm, CpuBackend());
}

Result SingleProcess(const ParamLayout& layout) {
  Result res;
  res.params = InitParams(layout);
  AdamW opt(layout, Config(), CpuBackend());
  for (int s = 0; s < kSteps; ++s) {
    TreeAccumulator acc(layout.total_floats(), kMicroBatches, CpuBackend());
    FlatBuffer g;
    for (int64_t j : MicroBatchOrder(kMicroBatches)) {
      g = Leaf(layout, s, j);
      acc.Add(g, {});
    }
    const double norm = GlobalGradNorm(g, CpuBackend());
    res.norms.push_back(norm);
    opt.Step(res.params, g, 1e-2 * (s + 1), ClipCoefficient(norm, Config().max_grad_norm));
  }
  res.m = Copy(opt.m());
  res.v = Copy(opt.v());
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
    ShardedOptimizer opt = Zero1(layout, comm);
    opt.LoadState({Copy(start.m), Copy(start.v), start.t});
    std::vector<double> norms;
    const int64_t local = kMicroBatches / world;
    for (int s = first; s < last; ++s) {
      TreeAccumulator acc(layout.total_floats(), local, CpuBackend());
      FlatBuffer g;
      for (int64_t q : MicroBatchOrder(local)) {
        g = Leaf(layout, s, comm.rank() + world * q);
        acc.Add(g, {});
      }
      TreeReduceScatter(comm, g.data(), opt.plan(), CpuBackend());  // what DataParallel::ReduceGradients does
      const double norm = ShardedGradNorm(comm, g.data(), opt.plan(), CpuBackend());
      norms.push_back(norm);
      opt.Step(params, g, 1e-2 * (s + 1), ClipCoefficient(norm, Config().max_grad_norm));
    }
    const OptimizerState* full = opt.SaveState();
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(full != nullptr, comm.rank() == 0);
    if (comm.rank() == 0) {
      res.params = std::move(params);
      res.m = Copy(full->m);
      res.v = Copy(full->v);
      res.norms = norms;
      res.t = full->step;
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

TEST(ShardedOptimizerZero1, BitIdenticalToSingleProcessForAnyWorld) {
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

// ZeRO-3: every rank holds only its owned range of the parameters (the master it was made over)
// and of the summed gradient; nothing is gathered after a step. The owned ranges, gathered at the
// end, are the single-process parameters, for world sizes that are not powers of two as well.
TEST(ShardedOptimizerZero3, OwnedRangeUpdatesAreTheSingleProcessBits) {
  const ParamLayout layout = SmallLayout();
  const Result want = SingleProcess(layout);
  for (int world : {1, 2, 3, 4}) {
    Result got;
    std::mutex mu;
    RunThreadGroup(world, [&](Communicator& comm) {
      const ShardPlan plan(layout.total_floats(), world);
      const size_t lo = plan.begin(comm.rank()), n = plan.size(comm.rank());
      const FlatBuffer init = InitParams(layout);
      FlatBuffer master(n), owned_grads(n);
      std::memcpy(master.data(), init.data() + lo, n * sizeof(float));
      ShardedOptimizer opt(layout, MakeUpdateRule(layout, Config()), GatherPolicy::kGatherOnUse,
                           comm, CpuBackend(), &master);
      EXPECT_EQ(opt.Owned().params, master.data());
      for (int s = 0; s < kSteps; ++s) {
        TreeAccumulator acc(layout.total_floats(), kMicroBatches, CpuBackend());
        FlatBuffer g;
        for (int64_t j : MicroBatchOrder(kMicroBatches)) {
          g = Leaf(layout, s, j);
          acc.Add(g, {});
        }
        std::memcpy(owned_grads.data(), g.data() + lo, n * sizeof(float));
        const double norm = GlobalGradNorm(g, CpuBackend());
        opt.Step(master, owned_grads, 1e-2 * (s + 1), ClipCoefficient(norm, Config().max_grad_norm));
      }
      FlatBuffer whole(comm.rank() == 0 ? layout.total_floats() : 0);
      GatherOwned(comm, plan, master.data(), comm.rank() == 0 ? whole.data() : nullptr,
                  CpuBackend());
      const OptimizerState* full = opt.SaveState();
      std::lock_guard<std::mutex> lock(mu);
      if (comm.rank() == 0) {
        got.params = std::move(whole);
        got.m = Copy(full->m);
        got.v = Copy(full->v);
        got.t = full->step;
      }
    });
    ExpectSame(got.params, want.params, "ZeRO-3 params", world);
    ExpectSame(got.m, want.m, "ZeRO-3 Adam m", world);
    ExpectSame(got.v, want.v, "ZeRO-3 Adam v", world);
    EXPECT_EQ(got.t, want.t);
  }
}

// Step refuses whole buffers under kGatherOnUse and owned ones under kAllGatherParams; ZeRO-1
// refuses a world that is not a power of two.
TEST(ShardedOptimizer, StepRefusesBuffersOfTheOtherPolicy) {
  const ParamLayout layout = SmallLayout();
  RunThreadGroup(2, [&](Communicator& comm) {
    const ShardPlan plan(layout.total_floats(), 2);
    FlatBuffer whole(layout.total_floats()), whole_g(layout.total_floats());
    FlatBuffer owned(plan.size(comm.rank())), owned_g(plan.size(comm.rank()));
    ShardedOptimizer z3(layout, MakeUpdateRule(layout, Config()), GatherPolicy::kGatherOnUse,
                        comm, CpuBackend());
    EXPECT_THROW(z3.Step(whole, whole_g, 1e-2, 1.0), Error);
    ShardedOptimizer z1 = Zero1(layout, comm);
    EXPECT_THROW(z1.Step(owned, owned_g, 1e-2, 1.0), Error);
    EXPECT_EQ(z1.step(), 0);
    EXPECT_EQ(z3.step(), 0);
  });
  RunThreadGroup(3, [&](Communicator& comm) {
    EXPECT_THROW(Zero1(layout, comm), Error);
  });
}

// Two steps on 4 ranks, gather the state (as a checkpoint would), continue on 1 rank: the same as
// four steps on 4 ranks, and as four in one process.
TEST(ShardedOptimizerZero1, StateMovesBetweenWorldSizes) {
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

TEST(ShardedOptimizerZero1, ShardsSplitTheOptimizerState) {
  const ParamLayout layout = SmallLayout();
  std::mutex mu;
  size_t total = 0;
  RunThreadGroup(4, [&](Communicator& comm) {
    ShardedOptimizer opt = Zero1(layout, comm);
    std::lock_guard<std::mutex> lock(mu);
    total += opt.shard_end() - opt.shard_begin();
    EXPECT_LE(opt.shard_end() - opt.shard_begin(), LargestShardFloats(layout.total_floats(), 4));
  });
  EXPECT_EQ(total, layout.total_floats());
}

// SaveState on R ranks gives rank 0 the full state of a single-process AdamW that took the same
// steps; loading it on R' ranks and saving again returns it unchanged, for every pair of worlds.
TEST(ShardedOptimizerZero1, SaveLoadRoundTripAcrossWorlds) {
  const ParamLayout layout = SmallLayout();
  const Result want = SingleProcess(layout);
  AdamW local(layout, Config(), CpuBackend());
  local.LoadState({Copy(want.m), Copy(want.v), want.t});
  const OptimizerState* local_state = local.SaveState();
  ExpectSame(local_state->m, want.m, "local round trip m", 1);
  ExpectSame(local_state->v, want.v, "local round trip v", 1);
  EXPECT_EQ(local_state->step, want.t);
  for (int world : {1, 2, 4, 8}) {
    OptimizerState saved;
    RunThreadGroup(world, [&](Communicator& comm) {
      ShardedOptimizer opt = Zero1(layout, comm);
      opt.LoadState({Copy(want.m), Copy(want.v), want.t});
      EXPECT_EQ(opt.step(), want.t);
      const OptimizerState* full = opt.SaveState();
      if (comm.rank() != 0) {
        EXPECT_EQ(full, nullptr);
        return;
      }
      ASSERT_NE(full, nullptr);
      saved = {Copy(full->m), Copy(full->v), full->step};
    });
    ExpectSame(saved.m, want.m, "round-trip m", world);
    ExpectSame(saved.v, want.v, "round-trip v", world);
    EXPECT_EQ(saved.step, want.t);
  }
}

TEST(ShardedOptimizerZero1, LoadStateRefusesAnotherModelsState) {
  const ParamLayout layout = SmallLayout();
  RunThreadGroup(2, [&](Communicator& comm) {
    ShardedOptimizer opt = Zero1(layout, comm);
    EXPECT_THROW(opt.LoadState({FlatBuffer(layout.total_floats() - 16),
                                FlatBuffer(layout.total_floats() - 16), 1}),
                 Error);
  });
  AdamW local(layout, Config(), CpuBackend());
  EXPECT_THROW(local.LoadState({FlatBuffer(3), FlatBuffer(3), 1}), Error);
}

}  // namespace
}  // namespace replica::parallel

namespace replica::parallel {
namespace {

// Owned() is what a sharded checkpoint writes and reads back: this rank's shard range with its
// own m and v storage; filling it and SetStep restore what LoadState would.
TEST(ShardedOptimizerZero1, OwnedIsThisRanksShardOfTheState) {
  const ParamLayout layout = SmallLayout();
  const Result want = SingleProcess(layout);
  for (int world : {1, 2, 4}) {
    RunThreadGroup(world, [&](Communicator& comm) {
      ShardedOptimizer loaded = Zero1(layout, comm), filled = Zero1(layout, comm);
      loaded.LoadState({Copy(want.m), Copy(want.v), want.t});
      const OwnedState a = loaded.Owned();
      EXPECT_EQ(a.begin, loaded.shard_begin());
      EXPECT_EQ(a.end, loaded.shard_end());
      EXPECT_EQ(a.params, nullptr);  // the caller's full parameter buffer is authoritative
      const size_t n = a.end - a.begin;
      EXPECT_EQ(std::memcmp(a.m, want.m.data() + a.begin, n * sizeof(float)), 0);
      EXPECT_EQ(std::memcmp(a.v, want.v.data() + a.begin, n * sizeof(float)), 0);
      const OwnedState b = filled.Owned();
      std::memcpy(b.m, want.m.data() + b.begin, n * sizeof(float));
      std::memcpy(b.v, want.v.data() + b.begin, n * sizeof(float));
      filled.SetStep(want.t);
      EXPECT_EQ(filled.step(), want.t);
      const OptimizerState* x = loaded.SaveState();  // collective
      const OptimizerState* y = filled.SaveState();
      if (comm.rank() == 0) {
        EXPECT_EQ(std::memcmp(x->m.data(), y->m.data(), x->m.size() * sizeof(float)), 0);
        EXPECT_EQ(std::memcmp(x->v.data(), y->v.data(), x->v.size() * sizeof(float)), 0);
      }
      EXPECT_THROW(filled.SetStep(-1), Error);
    });
  }
  AdamW local(layout, Config(), CpuBackend());
  const OwnedState all = local.Owned();
  EXPECT_EQ(all.begin, 0u);
  EXPECT_EQ(all.end, layout.total_floats());
  EXPECT_NE(all.m, nullptr);
}

}  // namespace
}  // namespace replica::parallel
