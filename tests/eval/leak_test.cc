// Reproduces the bug this project's reference run suffered: a loader misconfiguration mixes
// held-out documents into the training stream. The file check refuses a training list that
// contains an eval file outright; when the held-out documents arrive inside another file (here a
// "training" shard tokenized from a glob that also caught the held-out split), `decon` finds every
// injected item and the leak guard stops the run at the first batch that carries one, naming the
// step, the instance and the item. On the clean configuration both report zero.
// Tokens: training text uses ids 25000..49999, held-out documents 100..24999, EOS = 1, so the
// only shared spans are the injected documents and the ground truth is exact.
#include <unistd.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "core/error.h"
#include "data/fsl_dataset.h"
#include "data/loader.h"
#include "eval/decon.h"
#include "eval/leak_guard.h"

namespace replica::eval {
namespace {

constexpr uint32_t kEos = 1;
constexpr int64_t kSeqLen = 128;

using Doc = std::vector<uint32_t>;

std::vector<Doc> RandomDocs(std::mt19937_64& rng, int n, uint32_t lo, uint32_t hi, int min_len, int max_len) {
  std::vector<Doc> docs(n);
  for (Doc& d : docs) {
    d.resize(min_len + rng() % (max_len - min_len + 1));
    for (auto& t : d) t = lo + static_cast<uint32_t>(rng() % (hi - lo));
  }
  return docs;
}

// Writes docs EOS-terminated; returns each doc's token offset in the file.
std::vector<uint64_t> WriteTokens(const std::string& path, const std::vector<const Doc*>& docs) {
  std::vector<uint32_t> all;
  std::vector<uint64_t> offsets;
  for (const Doc* d : docs) {
    offsets.push_back(all.size());
    all.insert(all.end(), d->begin(), d->end());
    all.push_back(kEos);
  }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(all.data()), all.size() * 4);
  return offsets;
}

class LeakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test process: ctest -j runs the cases of this fixture concurrently.
    dir_ = ::testing::TempDir() + "/leak_test_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    std::mt19937_64 rng(2024);
    train_ = RandomDocs(rng, 400, 25000, 50000, 40, 400);
    heldout_ = RandomDocs(rng, 24, 100, 25000, 60, 300);
    // The registered eval set (pre-tokenized documents) and its tokenized shard.
    std::ofstream jl(dir_ + "/heldout.jsonl");
    for (size_t i = 0; i < heldout_.size(); ++i) {
      jl << nlohmann::json{{"id", "heldout-" + std::to_string(i)}, {"tokens", heldout_[i]}}.dump() << "\n";
    }
    jl.close();
    std::vector<const Doc*> h, a, b, mixed;
    for (const Doc& d : heldout_) h.push_back(&d);
    for (size_t i = 0; i < train_.size(); ++i) (i < 200 ? a : b).push_back(&train_[i]);
    WriteTokens(dir_ + "/heldout.npy", h);
    WriteTokens(dir_ + "/train_a.npy", a);
    WriteTokens(dir_ + "/train_b.npy", b);
    // The misconfigured shard: train_b's documents with the held-out documents spread among them.
    std::vector<size_t> which;  // index into heldout_ per mixed doc, or -1
    for (size_t i = 0; i < b.size(); ++i) {
      mixed.push_back(b[i]);
      which.push_back(SIZE_MAX);
      if (i % 8 == 3 && i / 8 < heldout_.size()) {
        mixed.push_back(&heldout_[i / 8]);
        which.push_back(i / 8);
      }
    }
    auto offsets = WriteTokens(dir_ + "/train_b_mixed.npy", mixed);
    for (size_t k = 0; k < mixed.size(); ++k) {
      if (which[k] != SIZE_MAX) injected_.push_back({which[k], offsets[k]});
    }
    ASSERT_EQ(injected_.size(), heldout_.size());
    EvalSet set = LoadEvalSet(dir_ + "/heldout.jsonl");
    auto enc = MakeByteEncoder(256, 257);
    index_ = std::make_shared<NgramIndex>(BuildDeconIndex({set}, *enc, options_));
  }

  std::shared_ptr<data::NumpyFslDataset> Dataset(const std::vector<std::string>& names) {
    data::FslDatasetOptions o;
    for (const auto& n : names) o.paths.push_back(dir_ + "/" + n);
    o.seq_len = kSeqLen;
    o.vocab_size = 50000;
    return std::make_shared<data::NumpyFslDataset>(o);
  }

  // Ground truth: does instance `inst` carry a leak by the guard's rule, and of which item?
  std::vector<size_t> LeaksIn(const data::NumpyFslDataset& ds, uint64_t inst, size_t mixed_file) {
    std::vector<size_t> items;
    data::InstanceLocation loc = ds.Locate(inst);
    if (loc.file != mixed_file) return items;
    for (const auto& [item, off] : injected_) {
      const uint64_t b = std::max<uint64_t>(off, loc.token_offset);
      const uint64_t e = std::min<uint64_t>(off + heldout_[item].size(), loc.token_offset + kSeqLen);
      if (e <= b) continue;
      const uint64_t len = e - b;
      if (static_cast<int64_t>(len) >= options_.min_span ||
          static_cast<double>(len) >= options_.min_coverage * heldout_[item].size())
        items.push_back(item);
    }
    return items;
  }

  std::string dir_;
  std::vector<Doc> train_, heldout_;
  std::vector<std::pair<size_t, uint64_t>> injected_;  // (held-out doc, offset in the mixed file)
  DeconOptions options_;
  std::shared_ptr<NgramIndex> index_;
};

TEST_F(LeakTest, FileCheckRefusesAnEvalFileByPathOrContent) {
  const std::vector<std::string> evals{dir_ + "/heldout.jsonl", dir_ + "/heldout.npy"};
  EXPECT_NO_THROW(CheckTrainFilesDisjoint({dir_ + "/train_a.npy", dir_ + "/train_b.npy"}, evals));
  try {
    CheckTrainFilesDisjoint({dir_ + "/train_a.npy", dir_ + "/./heldout.npy"}, evals);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is the evaluation file " + dir_ + "/heldout.npy"), std::string::npos) << e.what();
  }
  std::filesystem::copy_file(dir_ + "/heldout.npy", dir_ + "/part-0003.npy");
  try {
    CheckTrainFilesDisjoint({dir_ + "/train_a.npy", dir_ + "/part-0003.npy"}, evals);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("part-0003.npy has the same content"), std::string::npos) << e.what();
  }
}

TEST_F(LeakTest, DeconFindsEveryInjectedItemAndNothingOnCleanData) {
  DeconReport clean = ScanTokenFiles(*index_, {dir_ + "/train_a.npy", dir_ + "/train_b.npy"});
  nlohmann::json cj = clean.ToJson(*index_, options_);
  EXPECT_EQ(cj["eval_items"], heldout_.size());
  EXPECT_EQ(cj["contaminated_items"], 0);
  EXPECT_TRUE(cj["items"].empty());

  DeconReport dirty = ScanTokenFiles(*index_, {dir_ + "/train_a.npy", dir_ + "/train_b_mixed.npy"});
  nlohmann::json dj = dirty.ToJson(*index_, options_);
  EXPECT_EQ(dj["contaminated_items"], heldout_.size());
  ASSERT_EQ(dj["items"].size(), heldout_.size());
  std::map<std::string, uint64_t> where;
  for (const auto& [item, off] : injected_) where["heldout-" + std::to_string(item)] = off;
  for (const auto& it : dj["items"]) {
    EXPECT_TRUE(it["contaminated"].get<bool>());
    EXPECT_DOUBLE_EQ(it["coverage"].get<double>(), 1.0);
    ASSERT_EQ(it["hits"].size(), 1u);
    EXPECT_EQ(it["hits"][0]["train_file"], dir_ + "/train_b_mixed.npy");
    EXPECT_EQ(it["hits"][0]["offset"], where.at(it["id"]));
    EXPECT_EQ(it["hits"][0]["length"], it["tokens"]);
  }
}

TEST_F(LeakTest, GuardStopsAtTheFirstBatchCarryingAHeldOutDocument) {
  auto ds = Dataset({"train_a.npy", "train_b_mixed.npy"});
  data::LoaderOptions lo;
  lo.seed = 17;
  lo.global_batch_instances = 4;
  // Ground truth from the loader's order and the known layout of the mixed file.
  int64_t expected_step = -1;
  std::vector<size_t> expected_items;
  int64_t expected_leaks = 0;
  {
    data::DataLoader loader(ds, lo);
    for (uint64_t step = 0; step < loader.batches_per_epoch(); ++step) {
      data::RankBatch batch = loader.Next();
      for (uint32_t inst : batch.instances) {
        auto items = LeaksIn(*ds, inst, 1);
        expected_leaks += static_cast<int64_t>(items.size());
        if (!items.empty() && expected_step < 0) expected_step = static_cast<int64_t>(step);
      }
    }
  }
  ASSERT_GE(expected_step, 0);

  // stop: the run ends at exactly that step with an error naming step, instance and item.
  data::DataLoader loader(ds, lo);
  LeakGuard guard(index_, LeakGuardMode::kStop, options_);
  int64_t stopped_at = -1;
  std::string message;
  for (int64_t step = 0; step < static_cast<int64_t>(loader.batches_per_epoch()); ++step) {
    data::RankBatch batch = loader.Next();
    std::vector<int64_t> ids(batch.instances.begin(), batch.instances.end());
    try {
      guard.Check(step, ids, batch.input_ids.data(), static_cast<int64_t>(ids.size()), batch.seq_len);
    } catch (const Error& e) {
      stopped_at = step;
      message = e.what();
      // The first leak in this batch, by the ground truth.
      for (uint32_t inst : batch.instances) {
        auto items = LeaksIn(*ds, inst, 1);
        if (items.empty()) continue;
        EXPECT_NE(message.find(fmt::format("step {}: instance {}", step, inst)), std::string::npos) << message;
        EXPECT_NE(message.find(fmt::format("eval item \"heldout-{}\"", items[0])), std::string::npos) << message;
        break;
      }
      break;
    }
  }
  EXPECT_EQ(stopped_at, expected_step) << message;

  // warn: a whole epoch, every leaking (instance, item) pair reported once; the cost is timed.
  data::DataLoader loader2(ds, lo);
  LeakGuard warn(index_, LeakGuardMode::kWarn, options_);
  int64_t leaks = 0;
  for (uint64_t step = 0; step < loader2.batches_per_epoch(); ++step) {
    data::RankBatch batch = loader2.Next();
    std::vector<int64_t> ids(batch.instances.begin(), batch.instances.end());
    leaks += static_cast<int64_t>(
        warn.Check(step, ids, batch.input_ids.data(), static_cast<int64_t>(ids.size()), batch.seq_len).size());
  }
  EXPECT_EQ(leaks, expected_leaks);
  EXPECT_GT(warn.seconds_total(), 0.0);
  std::printf("leak guard (warn): %s\n", warn.Stats().dump().c_str());
}

TEST_F(LeakTest, GuardIsSilentOnCleanData) {
  auto ds = Dataset({"train_a.npy", "train_b.npy"});
  data::LoaderOptions lo;
  lo.seed = 17;
  lo.global_batch_instances = 4;
  data::DataLoader loader(ds, lo);
  LeakGuard guard(index_, LeakGuardMode::kStop, options_);
  for (uint64_t step = 0; step < loader.batches_per_epoch(); ++step) {
    data::RankBatch batch = loader.Next();
    std::vector<int64_t> ids(batch.instances.begin(), batch.instances.end());
    EXPECT_TRUE(guard.Check(step, ids, batch.input_ids.data(), static_cast<int64_t>(ids.size()), batch.seq_len).empty());
  }
  EXPECT_EQ(guard.leaks_found(), 0);
  EXPECT_EQ(guard.batches_checked(), static_cast<int64_t>(loader.batches_per_epoch()));
}

TEST(LeakGuardMode, ParsesConfigValues) {
  EXPECT_EQ(ParseLeakGuardMode("stop"), LeakGuardMode::kStop);
  EXPECT_EQ(ParseLeakGuardMode("warn"), LeakGuardMode::kWarn);
  EXPECT_EQ(ParseLeakGuardMode("off"), LeakGuardMode::kOff);
  EXPECT_THROW(ParseLeakGuardMode("yes"), Error);
}

}  // namespace
}  // namespace replica::eval
