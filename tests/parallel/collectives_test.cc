// The cross-rank half of the fixed reduction tree: for R = 1, 2, 4, 8 ranks (threads in one process,
// parallel/thread_group.h) the reduce-scattered gradient, the all-reduced scalars and the grad norm have
// the bits of the single-process TreeAccumulator sum, and the opposite exchange order would not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "parallel/collectives.h"
#include "parallel/owner_collectives.h"
#include "parallel/shard_plan.h"
#include "parallel/thread_group.h"
#include "train/grad_accum.h"
#include "optim/adamw.h"

namespace replica::parallel {
namespace {

// Leaves whose magnitudes span many binades, so the order of additions shows in the bits.
std::vector<FlatBuffer> MakeLeaves(int64_t m, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-20, 20);
  std::vector<FlatBuffer> leaves;
  for (int64_t j = 0; j < m; ++j) {
    FlatBuffer b(n);
    for (size_t i = 0; i < n; ++i) b.data()[i] = std::ldexp(unit(rng), expo(rng));
    leaves.push_back(std::move(b));
  }
  return leaves;
}

FlatBuffer Copy(const FlatBuffer& b) {
  FlatBuffer c(b.size());
  std::memcpy(c.data(), b.data(), b.size() * sizeof(float));
  return c;
}

// The single-process sum: TreeAccumulator over micro-batches in MicroBatchOrder(M).
FlatBuffer ReferenceSum(const std::vector<FlatBuffer>& leaves) {
  const int64_t m = static_cast<int64_t>(leaves.size());
  TreeAccumulator acc(leaves[0].size(), m, CpuBackend());
  FlatBuffer g(leaves[0].size());
  for (int64_t j : MicroBatchOrder(m)) {
    std::memcpy(g.data(), leaves[static_cast<size_t>(j)].data(), g.size() * sizeof(float));
    acc.Add(g, {});
  }
  return g;
}

// Rank r of R: its micro-batches j = r + R·q, summed locally in MicroBatchOrder(M / R) over q.
FlatBuffer RankPartial(const std::vector<FlatBuffer>& leaves, int r, int world) {
  const int64_t local = static_cast<int64_t>(leaves.size()) / world;
  TreeAccumulator acc(leaves[0].size(), local, CpuBackend());
  FlatBuffer g(leaves[0].size());
  for (int64_t q : MicroBatchOrder(local)) {
    std::memcpy(g.data(), leaves[static_cast<size_t>(r + world * q)].data(),
                g.size() * sizeof(float));
    acc.Add(g, {});
  }
  return g;
}

bool SameBits(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

TEST(ShardPlan, CoversBufferOnBlockBoundaries) {
  for (size_t total : {size_t{0}, size_t{16}, size_t{4096}, size_t{5000}, size_t{3 * 4096 + 48},
                       size_t{100 * 4096 + 16}}) {
    for (int world : {1, 2, 4, 8, 16}) {
      ShardPlan p(total, world);
      EXPECT_EQ(p.begin(0), 0u);
      EXPECT_EQ(p.end(world - 1), total);
      size_t blocks = 0;
      for (int r = 0; r < world; ++r) {
        EXPECT_LE(p.begin(r), p.end(r));
        if (r + 1 < world) {
          EXPECT_EQ(p.end(r), p.begin(r + 1));
        }
        if (p.begin(r) < total) {
          EXPECT_EQ(p.begin(r) % kNormBlock, 0u);
        }
        blocks += p.block_end(r) - p.block_begin(r);
        EXPECT_LE(p.size(r), (p.num_blocks() + world - 1) / world * kNormBlock);
      }
      EXPECT_EQ(blocks, p.num_blocks());
    }
  }
}

// TreeAccumulator's tree over 24 micro-batches splits them 16 + 8 in MicroBatchOrder, not
// evens + odds, so 2 ranks could not reproduce it: refused, as is a world not dividing M.
TEST(ShardPlan, RefusesBatchesThatCannotBeRankIndependent) {
  EXPECT_NO_THROW(RequireRankIndependentBatch(24, 1));
  EXPECT_THROW(RequireRankIndependentBatch(24, 2), Error);
  EXPECT_THROW(RequireRankIndependentBatch(2, 4), Error);
  EXPECT_NO_THROW(RequireRankIndependentBatch(8, 4));
  const auto leaves = MakeLeaves(24, 64, 1);
  FlatBuffer one = ReferenceSum(leaves);
  FlatBuffer a = RankPartial(leaves, 0, 2), b = RankPartial(leaves, 1, 2);
  AddInto(a, b, CpuBackend());
  EXPECT_FALSE(SameBits(a.data(), one.data(), 64));
}

TEST(ShardPlan, RefusesWorldThatIsNotAPowerOfTwo) {
  EXPECT_THROW(RequirePowerOfTwoWorld(3), Error);
  EXPECT_THROW(RequirePowerOfTwoWorld(0), Error);
  EXPECT_NO_THROW(RequirePowerOfTwoWorld(8));
  try {
    RequirePowerOfTwoWorld(6, "--ranks: rank count");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--ranks: rank count 6"), std::string::npos);
  }
}

// The reduce-scattered + all-gathered sum over R ranks equals the single-process tree, bit for bit,
// for several micro-batch counts and buffer sizes.
TEST(TreeReduceScatter, MatchesSingleProcessTreeForEveryWorld) {
  for (int64_t m : {8, 16, 32}) {
    for (size_t n : {size_t{7}, size_t{4096 * 3 + 80}}) {
      const auto leaves = MakeLeaves(m, n, static_cast<uint32_t>(m * 1000 + n));
      const FlatBuffer want = ReferenceSum(leaves);
      for (int world : {1, 2, 4, 8}) {
        std::vector<FlatBuffer> got(static_cast<size_t>(world));
        RunThreadGroup(world, [&](Communicator& comm) {
          FlatBuffer g = RankPartial(leaves, comm.rank(), world);
          ShardPlan plan(n, world);
          TreeReduceScatter(comm, g.data(), plan, CpuBackend());
          AllGatherShards(comm, g.data(), plan, CpuBackend());
          got[static_cast<size_t>(comm.rank())] = std::move(g);
        });
        for (int r = 0; r < world; ++r) {
          EXPECT_TRUE(SameBits(got[static_cast<size_t>(r)].data(), want.data(), n))
              << "M=" << m << " n=" << n << " world=" << world << " rank=" << r;
        }
      }
    }
  }
}

// Why distances go R/2, ..., 1: pairing ranks 0+1 and 2+3 first (distances 1, 2) builds nodes that
// the single-process tree does not have; with these leaves some element's bits differ.
TEST(TreeReduceScatter, GrowingDistancesWouldChangeTheBits) {
  const int world = 4;
  const auto leaves = MakeLeaves(8, 4096, 99);
  const FlatBuffer want = ReferenceSum(leaves);
  std::vector<FlatBuffer> p;
  for (int r = 0; r < world; ++r) p.push_back(RankPartial(leaves, r, world));
  FlatBuffer right(4096), wrong(4096);
  for (size_t i = 0; i < 4096; ++i) {
    right.data()[i] = (p[0].data()[i] + p[2].data()[i]) + (p[1].data()[i] + p[3].data()[i]);
    wrong.data()[i] = (p[0].data()[i] + p[1].data()[i]) + (p[2].data()[i] + p[3].data()[i]);
  }
  EXPECT_TRUE(SameBits(right.data(), want.data(), 4096));
  EXPECT_FALSE(SameBits(wrong.data(), want.data(), 4096));
}

// Exchanges larger than one chunk (kCollectiveChunkFloats) are split and still exact.
TEST(TreeReduceScatter, BuffersLargerThanOneChunk) {
  const size_t n = kCollectiveChunkFloats * 2 + 4096 * 3 + 16;
  const auto leaves = MakeLeaves(2, n, 5);
  const FlatBuffer want = ReferenceSum(leaves);
  std::vector<FlatBuffer> got(2);
  RunThreadGroup(2, [&](Communicator& comm) {
    FlatBuffer g = Copy(leaves[static_cast<size_t>(comm.rank())]);
    ShardPlan plan(n, 2);
    TreeReduceScatter(comm, g.data(), plan, CpuBackend());
    AllGatherShards(comm, g.data(), plan, CpuBackend());
    got[static_cast<size_t>(comm.rank())] = std::move(g);
  });
  EXPECT_TRUE(SameBits(got[0].data(), want.data(), n));
  EXPECT_TRUE(SameBits(got[1].data(), want.data(), n));
}

TEST(TreeAllReduce, ScalarsMatchTheTree) {
  const int64_t m = 16;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<TreeAccumulator::Scalars> leaf(m);
  for (auto& s : leaf) s = {std::ldexp(u(rng), static_cast<int>(rng() % 60) - 30), u(rng)};
  TreeAccumulator ref(1, m, CpuBackend());
  FlatBuffer dummy(1);
  TreeAccumulator::Scalars want{};
  for (int64_t j : MicroBatchOrder(m)) want = ref.Add(dummy, leaf[static_cast<size_t>(j)]);
  for (int world : {1, 2, 4, 8}) {
    std::mutex mu;
    RunThreadGroup(world, [&](Communicator& comm) {
      const int64_t local = m / world;
      TreeAccumulator acc(1, local, CpuBackend());
      FlatBuffer d(1);
      TreeAccumulator::Scalars s{};
      for (int64_t q : MicroBatchOrder(local)) {
        s = acc.Add(d, leaf[static_cast<size_t>(comm.rank() + world * q)]);
      }
      std::vector<double> v(s.begin(), s.end());
      TreeAllReduce(comm, v);
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_EQ(std::memcmp(v.data(), want.data(), sizeof(double) * 2), 0) << "world " << world;
    });
  }
}

TEST(ShardedGradNorm, EqualsGlobalGradNormBits) {
  for (size_t n : {size_t{100}, size_t{4096 * 5 + 32}, size_t{4096 * 9}}) {
    const auto leaves = MakeLeaves(1, n, static_cast<uint32_t>(n));
    const double want = GlobalGradNorm(leaves[0], CpuBackend());
    for (int world : {1, 2, 4, 8}) {
      std::mutex mu;
      RunThreadGroup(world, [&](Communicator& comm) {
        const double got = ShardedGradNorm(comm, leaves[0].data(), ShardPlan(n, world), CpuBackend());
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << "n=" << n << " world=" << world;
      });
    }
  }
}

TEST(Collectives, BroadcastAndGather) {
  for (int world : {1, 2, 4, 8}) {
    RunThreadGroup(world, [&](Communicator& comm) {
      for (int root = 0; root < world; ++root) {
        int64_t v = comm.rank() == root ? 1000 + root : -1;
        Broadcast(comm, &v, sizeof v, root);
        EXPECT_EQ(v, 1000 + root);
      }
      const size_t n = 4096 * 3 + 20;
      ShardPlan plan(n, world);
      std::vector<float> shard(plan.size(comm.rank()));
      for (size_t i = 0; i < shard.size(); ++i) {
        shard[i] = static_cast<float>(plan.begin(comm.rank()) + i);
      }
      std::vector<float> full(comm.rank() == 0 ? n : 0);
      GatherOwned(comm, plan, shard.data(), full.data(), CpuBackend());
      if (comm.rank() == 0) {
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(full[i], static_cast<float>(i));
      }
    });
  }
}

TEST(ThreadGroup, OneFailingRankFailsTheGroupWithoutHanging) {
  EXPECT_THROW(RunThreadGroup(4,
                              [](Communicator& comm) {
                                if (comm.rank() == 2) Fail("rank 2 broke");
                                std::vector<double> v{1.0};
                                TreeAllReduce(comm, v);
                              }),
               Error);
}

// Non-blocking streams: receives of one (source, tag) take its messages in posting order whatever
// order they are waited in; a tag's messages never match another tag's or the blocking calls'
// (tag 0), sent in between; a rank blocked in Wait is woken when another rank fails.
TEST(ThreadGroup, NonBlockingStreamsMatchInPostingOrderAndStaySeparate) {
  RunThreadGroup(2, [](Communicator& comm) {
    const int other = 1 - comm.rank();
    if (comm.rank() == 0) {
      const int a = 1, b = 2, c = 3, blocking = 4;
      std::vector<Request> sends = {comm.Isend(&a, sizeof a, other, 1),
                                    comm.Isend(&b, sizeof b, other, 1),
                                    comm.Isend(&c, sizeof c, other, 2)};
      comm.Send(&blocking, sizeof blocking, other);
      comm.WaitAll(sends);
      return;
    }
    int a = 0, b = 0, c = 0, blocking = 0;
    Request ra = comm.Irecv(&a, sizeof a, other, 1);
    Request rb = comm.Irecv(&b, sizeof b, other, 1);
    Request rc = comm.Irecv(&c, sizeof c, other, 2);
    comm.Recv(&blocking, sizeof blocking, other);
    comm.Wait(rc);
    comm.Wait(rb);  // fills ra first: posted before it on the same stream
    EXPECT_FALSE(rb.pending());
    comm.Wait(ra);
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 2);
    EXPECT_EQ(c, 3);
    EXPECT_EQ(blocking, 4);
  });
  EXPECT_THROW(RunThreadGroup(2,
                              [](Communicator& comm) {
                                if (comm.rank() == 1) Fail("rank 1 broke");
                                int x = 0;
                                Request r = comm.Irecv(&x, sizeof x, 1, 1);
                                comm.Wait(r);
                              }),
               Error);
}

}  // namespace
}  // namespace replica::parallel
