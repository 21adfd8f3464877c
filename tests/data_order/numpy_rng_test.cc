// numpy reproduction, step by step against the oracle files' intermediates, then whole orders
// against the oracle digests and against Debian's numpy for random (N, seed, epoch).
#include "data/numpy_rng.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <random>

#include "core/error.h"
#include "data/data_order.h"
#include "test_util.h"

namespace replica::data {
namespace {

using testing::LoadOracle;

class OracleTest : public ::testing::TestWithParam<const char*> {};

TEST_P(OracleTest, SeedSequenceAndPcg64Intermediates) {
  auto o = LoadOracle(GetParam());
  auto im = o["intermediates"];
  uint64_t rng_seed = o["rng_seed"];
  ASSERT_EQ(rng_seed, o["params"]["seed"].get<uint64_t>() + o["params"]["epoch"].get<uint64_t>());

  auto words = EntropyWords(rng_seed);
  EXPECT_EQ(words, im["seedseq_entropy_words"].get<std::vector<uint32_t>>());
  auto pool = SeedSequencePool(words);
  EXPECT_EQ(std::vector<uint32_t>(pool.begin(), pool.end()),
            im["seedseq_pool"].get<std::vector<uint32_t>>());
  auto state = GenerateStateWords(pool);
  EXPECT_EQ(std::vector<uint32_t>(state.begin(), state.end()),
            im["generate_state_uint32_x8"].get<std::vector<uint32_t>>());

  Pcg64 rng = Pcg64::FromSeed(rng_seed);
  EXPECT_EQ(HexU128(rng.state()), im["pcg64_initial_state_hex"].get<std::string>());
  EXPECT_EQ(HexU128(rng.increment()), im["pcg64_increment_hex"].get<std::string>());
  for (const auto& hex : im["first_8_next64_hex"]) EXPECT_EQ(HexU128(rng.Next64()), hex);
}

TEST_P(OracleTest, FirstSwapsUseRandomInterval) {
  auto o = LoadOracle(GetParam());
  uint64_t n = o["params"]["N"];
  Pcg64 rng = Pcg64::FromSeed(o["rng_seed"].get<uint64_t>());
  uint64_t i = n - 1;
  for (const auto& swap : o["intermediates"]["first_swaps"]) {
    EXPECT_EQ(swap["i"].get<uint64_t>(), i);
    EXPECT_EQ(rng.RandomInterval(i), swap["j"].get<uint64_t>()) << "step i=" << i;
    --i;
  }
}

TEST_P(OracleTest, WholeOrderMatches) {
  auto o = LoadOracle(GetParam());
  auto p = o["params"];
  GlobalOrder order(p["N"], p["seed"], p["epoch"], p["instances_per_batch"]);
  auto shuffled = order.shuffled();
  EXPECT_EQ(OrderSha256(shuffled), o["shuffled_sha256"].get<std::string>());
  EXPECT_EQ(OrderSha256(order.truncated()), o["truncated_sha256"].get<std::string>());
  EXPECT_EQ(order.num_batches(), o["num_batches"].get<uint64_t>());
  EXPECT_EQ(order.truncated().size(), o["total_size"].get<uint64_t>());

  auto first = o["shuffled_first_64"].get<std::vector<uint32_t>>();
  auto last = o["shuffled_last_64"].get<std::vector<uint32_t>>();
  auto tlast = o["truncated_last_64"].get<std::vector<uint32_t>>();
  EXPECT_EQ(std::vector<uint32_t>(shuffled.begin(), shuffled.begin() + 64), first);
  EXPECT_EQ(std::vector<uint32_t>(shuffled.end() - 64, shuffled.end()), last);
  EXPECT_EQ(std::vector<uint32_t>(order.truncated().end() - 64, order.truncated().end()), tlast);
  auto pos = o["samples"]["positions"].get<std::vector<uint64_t>>();
  auto val = o["samples"]["values"].get<std::vector<uint32_t>>();
  ASSERT_EQ(pos.size(), val.size());
  for (size_t k = 0; k < pos.size(); ++k) EXPECT_EQ(shuffled[pos[k]], val[k]) << "pos " << pos[k];
}

TEST_P(OracleTest, BatchesAndRankSplit) {
  auto o = LoadOracle(GetParam());
  auto p = o["params"];
  uint64_t world = p["dp_world_size"];
  GlobalOrder order(p["N"], p["seed"], p["epoch"], p["instances_per_batch"]);
  for (const auto& b : o["batches"]) {
    uint64_t bi = b["batch"];
    auto row = order.Batch(bi);
    EXPECT_EQ(std::vector<uint32_t>(row.begin(), row.end()),
              b["global"].get<std::vector<uint32_t>>());
    for (uint64_t r = 0; r < world; ++r)
      EXPECT_EQ(order.RankBatch(bi, r, world), b["ranks"][r].get<std::vector<uint32_t>>())
          << "batch " << bi << " rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(DataOrder, OracleTest,
                         ::testing::Values("order-small.json", "order-medium.json"));

TEST(NumpyRng, EntropyWordsSplitLeastSignificantFirst) {
  EXPECT_EQ(EntropyWords(0), (std::vector<uint32_t>{0}));
  EXPECT_EQ(EntropyWords(34522), (std::vector<uint32_t>{34522}));
  EXPECT_EQ(EntropyWords(uint128{1} << 32), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(EntropyWords((uint128{7} << 64) | 5), (std::vector<uint32_t>{5, 0, 7}));
}

TEST(NumpyRng, Next32ReturnsLowHalfThenBufferedHighHalf) {
  Pcg64 a = Pcg64::FromSeed(99), b = Pcg64::FromSeed(99);
  for (int k = 0; k < 10; ++k) {
    uint64_t r = a.Next64();
    EXPECT_EQ(b.Next32(), static_cast<uint32_t>(r));
    EXPECT_EQ(b.Next32(), static_cast<uint32_t>(r >> 32));
  }
}

TEST(NumpyRng, RandomIntervalStaysInRangeAndZeroConsumesNothing) {
  Pcg64 a = Pcg64::FromSeed(5), b = Pcg64::FromSeed(5);
  EXPECT_EQ(a.RandomInterval(0), 0u);
  EXPECT_EQ(a.Next64(), b.Next64());
  for (uint64_t max : {1ULL, 2ULL, 3ULL, 1000ULL, 0xffffffffULL, 0x100000000ULL, ~0ULL})
    for (int k = 0; k < 200; ++k) EXPECT_LE(a.RandomInterval(max), max);
}

TEST(DataOrder, SmallAndInvalidSizes) {
  EXPECT_EQ(ShuffledInstanceOrder(1, 3, 4), std::vector<uint32_t>{0});
  EXPECT_THROW(ShuffledInstanceOrder(0, 1, 1), Error);
  EXPECT_THROW(ShuffledInstanceOrder(kMaxInstances + 1, 1, 1), Error);
  EXPECT_THROW(GlobalOrder(10, 1, 1, 0), Error);
  GlobalOrder order(10, 1, 1, 4);
  EXPECT_EQ(order.num_batches(), 2u);
  EXPECT_THROW(order.Batch(2), Error);
  EXPECT_THROW(order.RankBatch(0, 0, 3), Error);  // 3 does not divide 4
  EXPECT_THROW(order.RankBatch(0, 2, 2), Error);  // rank out of range
}

// Prints the time of arange + shuffle for 1M entries (wall and this process's CPU time, the
// latter meaningful on a loaded machine); the assertion is only that it is a permutation.
TEST(DataOrder, ShuffleIsAPermutationAndFastForOneMillion) {
  auto cpu_ms = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
  };
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    double c0 = cpu_ms();
    auto order = ShuffledInstanceOrder(1'000'003, 1337, 1);
    double cpu = cpu_ms() - c0;
    double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("arange + shuffle of 1,000,003 entries: %.2f ms wall, %.2f ms cpu\n", wall, cpu);
    if (rep > 0) continue;
    std::vector<bool> seen(order.size());
    for (uint32_t v : order) {
      ASSERT_LT(v, order.size());
      ASSERT_FALSE(seen[v]);
      seen[v] = true;
    }
  }
}

// Independent reference: Debian's numpy shuffles the same arrays.
TEST(DataOrder, MatchesDebianNumpyForRandomCases) {
  if (!testing::HaveDebianNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  std::mt19937_64 gen(20240601);
  struct Case {
    uint64_t n, seed, epoch;
  };
  // Edge sizes around mask boundaries and multi-word seeds, then random cases.
  std::vector<Case> cases = {{1, 0, 0},           {2, 0, 1},          {3, 7, 0},
                             {65536, 1, 1},       {65537, 2, 3},      {1000, 1ULL << 32, 0},
                             {5000, ~0ULL - 3, 3}, {4097, 123456789012345ULL, 2}, {50, ~0ULL, 7}};  // the last sums past 2^64
  while (cases.size() < 24)
    cases.push_back({1 + gen() % 100'000, gen() % (1ULL << (gen() % 64)), gen() % 10});

  std::string script =
      "import hashlib, numpy as np\n"
      "for n, seed, epoch in [\n";
  for (auto& c : cases)
    script += "(" + std::to_string(c.n) + "," + std::to_string(c.seed) + "," +
              std::to_string(c.epoch) + "),\n";
  script +=
      "]:\n"
      "    g = np.arange(n, dtype=np.uint32)\n"
      "    np.random.Generator(np.random.PCG64(seed + epoch)).shuffle(g)\n"
      "    print(hashlib.sha256(g.astype('<u4').tobytes()).hexdigest())\n";
  testing::ScratchDir dir("numpy");
  auto lines = testing::RunPython(dir, script);
  ASSERT_EQ(lines.size(), cases.size()) << (lines.empty() ? "" : lines[0]);
  for (size_t k = 0; k < cases.size(); ++k) {
    auto order = ShuffledInstanceOrder(cases[k].n, cases[k].seed, cases[k].epoch);
    EXPECT_EQ(OrderSha256(order), lines[k])
        << "N=" << cases[k].n << " seed=" << cases[k].seed << " epoch=" << cases[k].epoch;
  }
}

}  // namespace
}  // namespace replica::data
