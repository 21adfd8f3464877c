// The contamination scanner on synthetic token streams where the truth is known exactly: eval
// items use ids below 25000 and the background training stream ids from 25000, so the only
// shared spans are the ones the test injects.
#include <gtest/gtest.h>
#include <omp.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "eval/decon.h"

namespace replica::eval {
namespace {

struct Injection {
  uint32_t item;
  uint64_t eval_offset, train_offset, length;
};

std::vector<uint32_t> RandomTokens(std::mt19937_64& rng, size_t n, uint32_t lo, uint32_t hi) {
  std::uniform_int_distribution<uint32_t> d(lo, hi - 1);
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<IndexedItem> MakeItems(std::mt19937_64& rng, int ppl, int mc) {
  std::vector<IndexedItem> items;
  for (int i = 0; i < ppl; ++i) {
    items.push_back({"ppl.jsonl", "p" + std::to_string(i), 13, RandomTokens(rng, 40 + rng() % 200, 0, 25000)});
  }
  for (int i = 0; i < mc; ++i) {
    items.push_back({"mc.jsonl", "m" + std::to_string(i), 8, RandomTokens(rng, 12 + rng() % 30, 0, 25000)});
  }
  return items;
}

// Copies item spans of the requested lengths into the stream at spread-out positions.
std::vector<Injection> Inject(std::mt19937_64& rng, const std::vector<IndexedItem>& items,
                              std::vector<uint32_t>* stream, const std::vector<uint64_t>& lengths) {
  std::vector<Injection> out;
  const uint64_t slot = stream->size() / lengths.size();
  for (size_t k = 0; k < lengths.size(); ++k) {
    uint32_t item;
    do item = static_cast<uint32_t>(rng() % items.size());
    while (items[item].tokens.size() < lengths[k]);
    const uint64_t e = rng() % (items[item].tokens.size() - lengths[k] + 1);
    const uint64_t t = k * slot + rng() % (slot - lengths[k]);
    std::copy_n(items[item].tokens.begin() + e, lengths[k], stream->begin() + t);
    out.push_back({item, e, t, lengths[k]});
  }
  return out;
}

bool Contains(const std::vector<Match>& ms, const Injection& inj) {
  for (const Match& m : ms) {
    if (m.item == inj.item && m.eval_offset == inj.eval_offset && m.train_offset == inj.train_offset &&
        m.length == inj.length)
      return true;
  }
  return false;
}

TEST(Decon, FindsEverySpanOfAtLeastNPlusSMinusOneAndNothingElse) {
  std::mt19937_64 rng(42);
  NgramIndex index(MakeItems(rng, 60, 40), {{13, 8}, {8, 4}});
  std::vector<uint32_t> stream = RandomTokens(rng, 400000, 25000, 50000);
  std::vector<uint64_t> lengths;
  for (int k = 0; k < 300; ++k) lengths.push_back(1 + rng() % 40);
  auto inj = Inject(rng, index.items(), &stream, lengths);
  uint64_t probes = 0;
  std::vector<Match> found = ScanStream(index, stream.data(), stream.size(), 0, &probes);
  // One probe per stride per table.
  EXPECT_EQ(probes, (stream.size() - 13) / 8 + 1 + (stream.size() - 8) / 4 + 1);
  int guaranteed = 0, shorter_found = 0;
  for (const Injection& j : inj) {
    const auto& item = index.items()[j.item];
    const uint64_t n = item.ngram, s = n == 13 ? 8 : 4;
    // Probed iff some multiple of s lies in [t, t + L - n].
    const bool probed = j.length >= n && ((j.train_offset + s - 1) / s * s <= j.train_offset + j.length - n);
    if (j.length >= n + s - 1) {
      ++guaranteed;
      EXPECT_TRUE(probed);
    }
    EXPECT_EQ(Contains(found, j), probed) << "item " << item.id << " length " << j.length;
    shorter_found += j.length < n + s - 1 && probed;
  }
  // Every reported match is one of the injected spans, exactly (no false positives).
  for (const Match& m : found) {
    bool known = false;
    for (const Injection& j : inj) {
      known |= m.item == j.item && m.train_offset == j.train_offset && m.length == j.length;
    }
    EXPECT_TRUE(known) << "unexpected match at " << m.train_offset;
    EXPECT_TRUE(std::equal(stream.begin() + m.train_offset, stream.begin() + m.train_offset + m.length,
                           index.items()[m.item].tokens.begin() + m.eval_offset));
  }
  EXPECT_GT(guaranteed, 50);
  EXPECT_GT(shorter_found, 0);  // luckily aligned shorter spans are found too

  // Stride 1 finds every span of at least n tokens.
  std::vector<Match> all = ScanStream(index, stream.data(), stream.size(), 1);
  for (const Injection& j : inj) {
    EXPECT_EQ(Contains(all, j), j.length >= static_cast<uint64_t>(index.items()[j.item].ngram));
  }
}

TEST(Decon, RepeatedAndAdjacentSpansAreEachReportedOnce) {
  std::mt19937_64 rng(3);
  NgramIndex index(MakeItems(rng, 4, 0), {{13, 8}});
  const auto& item = index.items()[0];
  std::vector<uint32_t> stream = RandomTokens(rng, 5000, 25000, 50000);
  // The whole item twice, back to back, and a 30-token piece later.
  std::copy(item.tokens.begin(), item.tokens.end(), stream.begin() + 100);
  std::copy(item.tokens.begin(), item.tokens.end(), stream.begin() + 100 + item.tokens.size());
  std::copy_n(item.tokens.begin() + 5, 30, stream.begin() + 3000);
  std::vector<Match> found = ScanStream(index, stream.data(), stream.size());
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0], (Match{0, 0, 100, item.tokens.size()}));
  EXPECT_EQ(found[1], (Match{0, 0, 100 + item.tokens.size(), item.tokens.size()}));
  EXPECT_EQ(found[2], (Match{0, 5, 3000, 30}));
  ItemVerdict v = JudgeItem(item, found, DeconOptions{});
  EXPECT_DOUBLE_EQ(v.coverage, 1.0);
  EXPECT_TRUE(v.contaminated);
  ItemVerdict partial = JudgeItem(item, {found[2]}, DeconOptions{});
  EXPECT_NEAR(partial.coverage, 30.0 / item.tokens.size(), 1e-12);
  EXPECT_EQ(partial.contaminated, 30.0 / item.tokens.size() >= 0.5);
}

TEST(Decon, FilesScanIsThreadCountInvariantAndDedupesChunkBoundaries) {
  std::mt19937_64 rng(9);
  NgramIndex index(MakeItems(rng, 20, 20), {{13, 8}, {8, 4}});
  std::vector<uint32_t> stream = RandomTokens(rng, 3u << 20, 25000, 50000);  // three 1M-token chunks
  std::vector<uint64_t> lengths(40, 60);
  Inject(rng, index.items(), &stream, lengths);
  // A span straddling the first chunk boundary (1<<20) is found from both chunks.
  const auto& big = index.items()[0];
  std::copy(big.tokens.begin(), big.tokens.end(), stream.begin() + (1 << 20) - 20);
  const std::string dir = ::testing::TempDir() + "/decon_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/train.npy";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(stream.data()), stream.size() * 4);

  DeconOptions opt;
  omp_set_num_threads(1);
  DeconReport one = ScanTokenFiles(index, {path});
  omp_set_num_threads(2);
  DeconReport two = ScanTokenFiles(index, {path});
  nlohmann::json a = one.ToJson(index, opt), b = two.ToJson(index, opt);
  EXPECT_EQ(a["items"], b["items"]);
  EXPECT_EQ(a["probes"], b["probes"]);
  EXPECT_EQ(a["train_tokens"], stream.size());
  int straddling = 0;
  for (const TrainHit& h : one.hits) straddling += h.match.train_offset == (1u << 20) - 20;
  EXPECT_EQ(straddling, 1);
  EXPECT_EQ(a["contaminated_items"].get<int64_t>(), one.ContaminatedItems(index, opt));
  EXPECT_GT(a["contaminated_items"].get<int64_t>(), 0);

  // uint16 files: the same ids read back the same way.
  std::vector<uint16_t> small(1000, 30000);
  std::copy(big.tokens.begin(), big.tokens.end(), small.begin() + 10);
  const std::string p16 = dir + "/train16.npy";
  std::ofstream(p16, std::ios::binary).write(reinterpret_cast<const char*>(small.data()), small.size() * 2);
  DeconReport r16 = ScanTokenFiles(index, {p16}, 2);
  ASSERT_EQ(r16.hits.size(), 1u);
  EXPECT_EQ(r16.hits[0].match.length, big.tokens.size());

  // A file that is not whole tokens is refused by name.
  std::ofstream(dir + "/odd.npy", std::ios::binary) << "abcde";
  try {
    ScanTokenFiles(index, {dir + "/odd.npy"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("odd.npy: size 5 bytes is not a whole number"), std::string::npos);
  }
}

TEST(Decon, BloomFilterFalsePositiveRateIsSmall) {
  BlockedBloom bloom(100000);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) bloom.Insert(rng());
  std::mt19937_64 probe(6);
  int fp = 0;
  for (int i = 0; i < 1000000; ++i) fp += bloom.MayContain(probe());
  EXPECT_LT(fp, 5000);  // < 0.5%
  std::mt19937_64 again(5);
  for (int i = 0; i < 100000; ++i) ASSERT_TRUE(bloom.MayContain(again()));
  RecordProperty("bloom_fpr", std::to_string(fp / 1e6));
  std::printf("blocked Bloom, 16 bits/key: false-positive rate %.5f\n", fp / 1e6);
}

TEST(Decon, ItemsShorterThanTheirNgramAreListedAsUnindexed) {
  std::vector<IndexedItem> items{{"mc.jsonl", "short", 8, {1, 2, 3}}, {"mc.jsonl", "ok", 8, {1, 2, 3, 4, 5, 6, 7, 8}}};
  NgramIndex index(items, {{8, 4}});
  ASSERT_EQ(index.unindexed().size(), 1u);
  EXPECT_EQ(index.items()[index.unindexed()[0]].id, "short");
  EXPECT_THROW(NgramIndex(items, {{13, 8}}), Error);  // 8-gram items but no 8-gram table
}

}  // namespace
}  // namespace replica::eval
