// NumpyFSLDataLoader: batches follow GlobalOrder, ranks split batches strided, resuming from a
// saved LoaderState continues the identical global stream for any world size and across epoch
// boundaries, and a state from another dataset is refused.
#include "data/loader.h"

#include <gtest/gtest.h>
#include <omp.h>

#include "core/error.h"
#include "data/fsl_dataset.h"
#include "test_util.h"

namespace replica::data {
namespace {

using testing::ScratchDir;
using testing::WriteCountingFile;

constexpr int64_t kSeq = 4;
constexpr uint64_t kBatch = 8;   // I
constexpr uint64_t kSeed = 77;

// 103 instances over three files -> 12 whole batches per epoch, 7 instances dropped each epoch.
std::shared_ptr<NumpyFslDataset> MakeDataset(const ScratchDir& dir) {
  std::vector<std::string> paths = {WriteCountingFile(dir, "a.npy", 0, 50 * kSeq + 3),
                                    WriteCountingFile(dir, "b.npy", 100000, 33 * kSeq),
                                    WriteCountingFile(dir, "c.npy", 200000, 20 * kSeq + 1)};
  return std::make_shared<NumpyFslDataset>(FslDatasetOptions{paths, kSeq, TokenDtype::kUint32, 300000});
}

struct GlobalStep {
  std::vector<uint32_t> instances;  // the whole global batch row, in row order
  std::vector<int32_t> input_ids, labels;
};

// Runs all ranks of a world for `steps` batches and reassembles each global batch from the
// strided rank parts (rank r holds row positions r, r + R, ...).
std::vector<GlobalStep> RunWorld(std::vector<DataLoader>& ranks, int steps) {
  uint64_t R = ranks.size();
  std::vector<GlobalStep> out;
  for (int s = 0; s < steps; ++s) {
    GlobalStep g;
    g.instances.resize(kBatch);
    g.input_ids.resize(kBatch * kSeq);
    g.labels.resize(kBatch * kSeq);
    for (uint64_t r = 0; r < R; ++r) {
      RankBatch b = ranks[r].Next();
      EXPECT_EQ(b.instances.size(), kBatch / R);
      for (size_t k = 0; k < b.instances.size(); ++k) {
        size_t pos = r + k * R;
        g.instances[pos] = b.instances[k];
        std::copy_n(b.input_ids.begin() + k * kSeq, kSeq, g.input_ids.begin() + pos * kSeq);
        std::copy_n(b.labels.begin() + k * kSeq, kSeq, g.labels.begin() + pos * kSeq);
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<DataLoader> MakeWorld(std::shared_ptr<NumpyFslDataset> ds, uint64_t world) {
  std::vector<DataLoader> ranks;
  for (uint64_t r = 0; r < world; ++r)
    ranks.emplace_back(ds, LoaderOptions{kSeed, kBatch, r, world, 0, 1});
  return ranks;
}

TEST(Loader, BatchesFollowTheGlobalOrderAndCarryTheirTokens) {
  ScratchDir dir("order");
  auto ds = MakeDataset(dir);
  ASSERT_EQ(ds->num_instances(), 103u);
  auto world = MakeWorld(ds, 1);
  ASSERT_EQ(world[0].batches_per_epoch(), 12u);
  auto steps = RunWorld(world, 12);
  GlobalOrder order(103, kSeed, 1, kBatch);
  std::vector<int32_t> buf(kSeq);
  for (uint64_t b = 0; b < 12; ++b) {
    auto row = order.Batch(b);
    ASSERT_EQ(steps[b].instances, std::vector<uint32_t>(row.begin(), row.end()));
    for (uint64_t k = 0; k < kBatch; ++k) {
      ds->ReadInstance(row[k], buf.data());
      for (int64_t t = 0; t < kSeq; ++t) {
        EXPECT_EQ(steps[b].input_ids[k * kSeq + t], buf[t]);
        EXPECT_EQ(steps[b].labels[k * kSeq + t], t + 1 < kSeq ? buf[t + 1] : kLabelIgnore);
      }
    }
  }
}

TEST(Loader, RanksTogetherReadExactlyTheGlobalRow) {
  ScratchDir dir("union");
  auto ds = MakeDataset(dir);
  auto ref = MakeWorld(ds, 1);
  auto expect = RunWorld(ref, 20);
  for (uint64_t R : {2u, 4u, 8u}) {
    auto world = MakeWorld(ds, R);
    auto got = RunWorld(world, 20);
    for (int s = 0; s < 20; ++s) {
      EXPECT_EQ(got[s].instances, expect[s].instances) << "world " << R << " step " << s;
      EXPECT_EQ(got[s].input_ids, expect[s].input_ids) << "world " << R << " step " << s;
    }
  }
}

TEST(Loader, EpochBoundaryReshufflesWithNextSeed) {
  ScratchDir dir("epoch");
  auto ds = MakeDataset(dir);
  DataLoader loader(ds, {kSeed, kBatch, 0, 1, 0, 1});
  for (int s = 0; s < 11; ++s) loader.Next();
  EXPECT_EQ(loader.state().epoch, 1u);
  EXPECT_EQ(loader.state().batches_processed, 11u);
  RankBatch last = loader.Next();
  EXPECT_EQ(last.epoch, 1u);
  EXPECT_EQ(last.batch, 11u);
  EXPECT_EQ(loader.state().epoch, 2u);
  EXPECT_EQ(loader.state().batches_processed, 0u);
  RankBatch first = loader.Next();
  EXPECT_EQ(first.epoch, 2u);
  GlobalOrder second(103, kSeed, 2, kBatch);
  auto row = second.Batch(0);
  EXPECT_EQ(first.instances, std::vector<uint32_t>(row.begin(), row.end()));
}

// Stop after k batches on world A, save the state as JSON text, restore on world B, and compare
// the remaining stream with a run that never stopped. 12 batches per epoch, so k = 11, 12, 13
// and 25 sit on both sides of epoch boundaries.
TEST(Loader, ResumeGivesTheSameStreamForAnyWorldSize) {
  ScratchDir dir("resume");
  auto ds = MakeDataset(dir);
  constexpr int kTotal = 30;
  auto ref = MakeWorld(ds, 1);
  auto expect = RunWorld(ref, kTotal);
  for (uint64_t before : {1u, 2u, 4u}) {
    for (uint64_t after : {1u, 2u, 4u}) {
      for (int k : {0, 5, 11, 12, 13, 25}) {
        auto first = MakeWorld(ds, before);
        RunWorld(first, k);
        std::string saved = first[0].state().ToJson().dump();
        for (auto& r : first) EXPECT_EQ(r.state(), first[0].state());

        auto second = MakeWorld(ds, after);
        for (auto& r : second) r.Restore(LoaderState::FromJson(nlohmann::json::parse(saved)));
        auto rest = RunWorld(second, kTotal - k);
        for (int s = 0; s < kTotal - k; ++s) {
          ASSERT_EQ(rest[s].instances, expect[k + s].instances)
              << "world " << before << "->" << after << " k=" << k << " step " << k + s;
          ASSERT_EQ(rest[s].input_ids, expect[k + s].input_ids);
          ASSERT_EQ(rest[s].labels, expect[k + s].labels);
        }
      }
    }
  }
}

TEST(Loader, StateJsonRoundTripsAndCheckpointSeedWins) {
  ScratchDir dir("json");
  auto ds = MakeDataset(dir);
  DataLoader a(ds, {kSeed, kBatch, 0, 1, 0, 1});
  for (int s = 0; s < 14; ++s) a.Next();
  LoaderState st = a.state();
  EXPECT_EQ(st.epoch, 2u);
  EXPECT_EQ(st.batches_processed, 2u);
  nlohmann::json j = st.ToJson();
  EXPECT_EQ(j["tokens_processed"], 2 * kBatch * kSeq);
  EXPECT_EQ(LoaderState::FromJson(j), st);

  DataLoader b(ds, {kSeed + 1, kBatch, 0, 1, 0, 1});
  b.Restore(st);
  EXPECT_EQ(b.state(), st);
  EXPECT_EQ(b.Next().instances, a.Next().instances);

  nlohmann::json broken = j;
  broken.erase("epoch");
  try {
    LoaderState::FromJson(broken);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'epoch'"), std::string::npos) << e.what();
  }
  broken = j;
  broken["seed"] = "seven";
  EXPECT_THROW(LoaderState::FromJson(broken), Error);
}

TEST(Loader, RefusesStateOfAnotherDatasetOrBatch) {
  ScratchDir dir("mismatch");
  auto ds = MakeDataset(dir);
  ScratchDir other_dir("mismatch-other");
  auto other = std::make_shared<NumpyFslDataset>(FslDatasetOptions{
      {WriteCountingFile(other_dir, "x.npy", 7, 103 * kSeq)}, kSeq, TokenDtype::kUint32, 300000});
  DataLoader a(ds, {kSeed, kBatch, 0, 1, 0, 1});
  a.Next();
  DataLoader b(other, {kSeed, kBatch, 0, 1, 0, 1});
  try {
    b.Restore(a.state());
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(ds->fingerprint()), std::string::npos) << m;
    EXPECT_NE(m.find(other->fingerprint()), std::string::npos) << m;
  }
  DataLoader c(ds, {kSeed, kBatch * 2, 0, 1, 0, 1});
  EXPECT_THROW(c.Restore(a.state()), Error);
  LoaderState bad = a.state();
  bad.batches_processed = 12;
  EXPECT_THROW(a.Restore(bad), Error);
}

// OLMo-core's NumpyDataLoaderBase.reshuffle raises "'epoch' must be at least 1, got 0"; so does
// replica wherever an epoch enters: the order, a loader's start epoch, a restored state.
TEST(Loader, RefusesEpochZeroSayingEpochsStartAtOne) {
  ScratchDir dir("epoch0");
  auto ds = MakeDataset(dir);
  auto expect_epoch_message = [](auto&& f) {
    try {
      f();
      ADD_FAILURE() << "epoch 0 accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("'epoch' must be at least 1, got 0"), std::string::npos)
          << e.what();
    }
  };
  expect_epoch_message([] { GlobalOrder(10, 1, 0, 2); });
  expect_epoch_message([&] { DataLoader(ds, {kSeed, kBatch, 0, 1, 0, 0}); });
  DataLoader a(ds, {kSeed, kBatch, 0, 1, 0, 1});
  LoaderState zero = a.state();
  zero.epoch = 0;
  expect_epoch_message([&] { a.Restore(zero); });
}

TEST(Loader, MicroBatchesAreConsecutiveSlicesOfTheRankBatch) {
  ScratchDir dir("micro");
  auto ds = MakeDataset(dir);
  DataLoader loader(ds, {kSeed, kBatch, 1, 2, 2, 1});
  RankBatch b = loader.Next();
  ASSERT_EQ(b.instances.size(), 4u);
  ASSERT_EQ(b.num_micro_batches(), 2);
  for (int64_t m = 0; m < 2; ++m) {
    MicroBatch mb = b.micro_batch(m);
    EXPECT_EQ(mb.rows, 2);
    EXPECT_EQ(mb.seq_len, kSeq);
    EXPECT_EQ(mb.instances, b.instances.data() + 2 * m);
    EXPECT_EQ(mb.input_ids, b.input_ids.data() + 2 * m * kSeq);
    EXPECT_EQ(mb.labels, b.labels.data() + 2 * m * kSeq);
  }
  EXPECT_THROW(b.micro_batch(2), Error);
  EXPECT_THROW(DataLoader(ds, LoaderOptions{kSeed, kBatch, 0, 2, 3, 1}), Error);
  EXPECT_THROW(DataLoader(ds, LoaderOptions{kSeed, kBatch, 0, 3, 0, 1}), Error);
  EXPECT_THROW(DataLoader(ds, LoaderOptions{kSeed, kBatch, 2, 2, 0, 1}), Error);
  EXPECT_THROW(DataLoader(ds, LoaderOptions{kSeed, 104, 0, 1, 0, 1}), Error);  // > N
}

TEST(Loader, SameBatchesForAnyThreadCount) {
  ScratchDir dir("threads");
  auto ds = MakeDataset(dir);
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  DataLoader a(ds, {kSeed, kBatch, 0, 1, 0, 1});
  RankBatch one = a.Next();
  omp_set_num_threads(2);
  DataLoader b(ds, {kSeed, kBatch, 0, 1, 0, 1});
  RankBatch two = b.Next();
  omp_set_num_threads(saved);
  EXPECT_EQ(one.input_ids, two.input_ids);
  EXPECT_EQ(one.labels, two.labels);
}

}  // namespace
}  // namespace replica::data
