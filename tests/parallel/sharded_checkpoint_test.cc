// Sharded checkpoints (checkpoint/sharded_writer.h, format version 2) written by R in-process
// ranks (thread_group.h) over the real CommunicatorCheckpointGroup: every rank writes only its
// ShardPlan range; the result reads back whole and in any float range, whatever R wrote it; the
// commit happens only once every rank's files are written; damaged shards and manifests are
// refused naming the file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "checkpoint/format.h"
#include "ops/cpu/cpu_backend.h"
#include "checkpoint/reader.h"
#include "checkpoint/sharded_format.h"
#include "checkpoint/sharded_writer.h"
#include "checkpoint/writer.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "parallel/checkpoint_group.h"
#include "parallel/shard_plan.h"
#include "parallel/thread_group.h"
#include "testing/util.h"

namespace fs = std::filesystem;

namespace replica::parallel {
namespace {

using test::ErrorOf;
using ::testing::HasSubstr;

// ~50k floats: 13 grad-norm blocks, so 4 ranks get non-empty shards of different sizes.
ParamLayout Layout() {
  ParamLayout l;
  l.Add("model.embed_tokens.weight", {256, 64});
  l.Add("model.layers.0.mlp.up_proj.weight", {300, 64});
  l.Add("model.norm.weight", {61});
  l.Add("lm_head.weight", {256, 64});
  return l;
}

struct Full {
  FlatBuffer params, m, v;
};

Full MakeFull(const ParamLayout& layout) {
  Full f{FlatBuffer(layout.total_floats()), FlatBuffer(layout.total_floats()),
         FlatBuffer(layout.total_floats())};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const ParamView& view : layout.views())
    for (size_t i = view.offset; i < view.offset + view.numel; ++i) {
      f.params.data()[i] = normal(rng);
      f.m.data()[i] = normal(rng) * 1e-3f;
      f.v.data()[i] = std::fabs(normal(rng)) * 1e-7f;
    }
  f.params.data()[0] = -0.0f;  // bits a lossy path would lose
  f.params.data()[1] = 1e-45f;
  return f;
}

// R ranks each save their ShardPlan range of `full` as step `step` of run_dir, polling (as the
// trainer does between steps) until the write is committed.
void SaveOnRanks(int world, const std::string& run_dir, const ParamLayout& layout, const Full& full,
                 int64_t step, bool background = true) {
  RunThreadGroup(world, [&](Communicator& comm) {
    CommunicatorCheckpointGroup group(comm);
    ShardedCheckpointWriter w({.run_dir = run_dir, .keep = 0, .background = background}, group, CpuBackend());
    const ShardPlan plan(layout.total_floats(), world);
    const size_t b = plan.begin(comm.rank()), e = plan.end(comm.rank());
    w.Save(step, layout, {b, e, full.params.data() + b, full.m.data() + b, full.v.data() + b}, 42,
           nlohmann::json{{"step", step}}, nlohmann::json{{"model_type", "olmo3"}});
    while (w.InFlight()) {  // every rank sees the same AllTrue answer, so all leave together
      w.Poll();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    w.Finish();
  });
}

bool Same(const float* a, const float* b, size_t n) {
  return std::memcmp(a, b, n * sizeof(float)) == 0;
}

class ShardedCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override { SetLogLevel(LogLevel::kWarn); }
  std::string Dir(int64_t step) const {
    return (tmp_.path() / "checkpoints" / CheckpointDirName(step)).string();
  }
  test::TempDir tmp_{"sharded-ckpt"};
  const ParamLayout layout_ = Layout();
  const Full full_ = MakeFull(layout_);
};

TEST_F(ShardedCheckpoint, AnyWorldWritesWhatAnyWorldReads) {
  for (int world : {1, 2, 4}) {
    SaveOnRanks(world, tmp_.str(), layout_, full_, world);
    const std::string dir = Dir(world);
    ASSERT_TRUE(HasDone(dir)) << world;
    Checkpoint c = Checkpoint::Open(dir);  // verifies every shard's size and digest
    ASSERT_TRUE(c.sharded().has_value());
    EXPECT_EQ(c.version(), kShardedFormatVersion);
    EXPECT_EQ(c.sharded()->world, world);
    EXPECT_TRUE(c.has_optimizer());
    EXPECT_EQ(c.adam_step(), 42);
    EXPECT_EQ(c.state()["step"], world);
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(fs::exists(fs::path(dir) / ShardFileName(r, world))) << ShardFileName(r, world);
    EXPECT_FALSE(fs::exists(fs::path(dir) / kModelFile));  // nobody wrote the whole model

    Full got{FlatBuffer(layout_.total_floats()), FlatBuffer(layout_.total_floats()),
             FlatBuffer(layout_.total_floats())};
    c.LoadParams(layout_, got.params);
    EXPECT_EQ(c.LoadOptimizer(layout_, got.m, got.v), 42);
    const size_t n = layout_.total_floats();
    EXPECT_TRUE(Same(got.params.data(), full_.params.data(), n)) << world;
    EXPECT_TRUE(Same(got.m.data(), full_.m.data(), n)) << world;
    EXPECT_TRUE(Same(got.v.data(), full_.v.data(), n)) << world;

    // Every other world's ranges, and ranges straddling shard boundaries.
    for (int reader_world : {1, 2, 4, 8}) {
      const ShardPlan plan(n, reader_world);
      for (int r = 0; r < reader_world; ++r) {
        const size_t b = plan.begin(r), e = plan.end(r);
        std::vector<float> v(e - b);
        c.ReadRange(ShardField::kAdamV, layout_, b, e, v.data());
        EXPECT_TRUE(Same(v.data(), full_.v.data() + b, e - b)) << world << " -> " << reader_world;
      }
    }
    const ShardPlan own(n, world);
    for (int r = 1; r < world; ++r) {
      const size_t b = own.begin(r) - 5, e = own.begin(r) + 7;
      std::vector<float> m(e - b);
      c.ReadRange(ShardField::kAdamM, layout_, b, e, m.data());
      EXPECT_TRUE(Same(m.data(), full_.m.data() + b, e - b));
    }
  }
}

TEST_F(ShardedCheckpoint, SynchronousWriteIsTheSame) {
  SaveOnRanks(2, tmp_.str(), layout_, full_, 5, /*background=*/false);
  FlatBuffer p(layout_.total_floats());
  Checkpoint::Open(Dir(5)).LoadParams(layout_, p);
  EXPECT_TRUE(Same(p.data(), full_.params.data(), layout_.total_floats()));
}

TEST_F(ShardedCheckpoint, NotCommittedUntilEveryRankIsDone) {
  // Rank 1 delays its Save's snapshot; rank 0 polls meanwhile and must not publish.
  RunThreadGroup(2, [&](Communicator& comm) {
    CommunicatorCheckpointGroup group(comm);
    ShardedCheckpointWriter w({.run_dir = tmp_.str()}, group, CpuBackend());
    const ShardPlan plan(layout_.total_floats(), 2);
    const size_t b = plan.begin(comm.rank()), e = plan.end(comm.rank());
    const OwnedShard shard{b, e, full_.params.data() + b, full_.m.data() + b, full_.v.data() + b};
    w.Save(3, layout_, shard, 1, nlohmann::json{{"step", 3}}, nullptr);
    // Both ranks poll once at once: at most one may be done, and nothing is published before.
    if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    w.Poll();
    if (w.InFlight()) {
      EXPECT_FALSE(fs::exists(Dir(3)));
      EXPECT_FALSE(fs::exists(fs::path(Dir(3) + ".tmp") / kManifestFile));
    }
    w.Finish();
    EXPECT_FALSE(w.InFlight());
  });
  EXPECT_NO_THROW(VerifyCheckpoint(Dir(3)));
}

TEST_F(ShardedCheckpoint, NewerWriteOfAnotherWorldReplacesNothingOlder) {
  SaveOnRanks(4, tmp_.str(), layout_, full_, 10);
  SaveOnRanks(2, tmp_.str(), layout_, full_, 20);
  EXPECT_NO_THROW(VerifyCheckpoint(Dir(10)));
  EXPECT_NO_THROW(VerifyCheckpoint(Dir(20)));
  auto found = FindLatestValid(tmp_.str());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 20);
}

// Rewrites the manifest through `edit` and DONE to match, as a consistent but wrong writer would.
void EditManifest(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
  const std::string path = (fs::path(dir) / kManifestFile).string();
  nlohmann::json m = nlohmann::json::parse(ReadFile(path));
  edit(m);
  const std::string text = m.dump(2) + "\n";
  WriteFileAtomic(path, text);
  WriteFileAtomic((fs::path(dir) / kDoneFile).string(), DoneContents(m["step"].get<int64_t>(), text));
}

TEST_F(ShardedCheckpoint, MissingOrTruncatedShardIsRefusedNamingIt) {
  SaveOnRanks(2, tmp_.str(), layout_, full_, 1);
  const std::string shard1 = (fs::path(Dir(1)) / ShardFileName(1, 2)).string();
  fs::resize_file(shard1, fs::file_size(shard1) - 4);
  EXPECT_THAT(ErrorOf([&] { VerifyCheckpoint(Dir(1)); }),
              AllOf(HasSubstr(shard1), HasSubstr("truncated")));
  fs::remove(shard1);
  EXPECT_THAT(ErrorOf([&] { VerifyCheckpoint(Dir(1)); }),
              AllOf(HasSubstr(shard1), HasSubstr("missing")));
  EXPECT_FALSE(FindLatestValid(tmp_.str()).has_value());
}

TEST_F(ShardedCheckpoint, ManifestRangesMustCoverTheLayout) {
  SaveOnRanks(2, tmp_.str(), layout_, full_, 1);
  EditManifest(Dir(1), [](nlohmann::json& m) {
    m["sharded"]["shards"][1]["begin"] = m["sharded"]["shards"][1]["begin"].get<size_t>() + 16;
  });
  EXPECT_THAT(ErrorOf([&] { VerifyCheckpoint(Dir(1)); }),
              AllOf(HasSubstr("do not cover the layout"), HasSubstr(ShardFileName(1, 2))));
  EditManifest(Dir(1), [&](nlohmann::json& m) {
    m["sharded"]["shards"][1]["begin"] = m["sharded"]["shards"][0]["end"];
    m["sharded"]["shards"][1]["end"] = layout_.total_floats() - 16;
  });
  EXPECT_THAT(ErrorOf([&] { VerifyCheckpoint(Dir(1)); }), HasSubstr("do not cover the layout"));
}

TEST_F(ShardedCheckpoint, ShardWithAnotherRangeIsRefusedNamingIt) {
  SaveOnRanks(2, tmp_.str(), layout_, full_, 1);
  // Still a tiling, but not the ranges the files hold.
  EditManifest(Dir(1), [](nlohmann::json& m) {
    const size_t cut = m["sharded"]["shards"][0]["end"].get<size_t>() - 4096;
    m["sharded"]["shards"][0]["end"] = cut;
    m["sharded"]["shards"][1]["begin"] = cut;
  });
  Checkpoint c = Checkpoint::Open(Dir(1));  // the manifest itself is consistent
  FlatBuffer p(layout_.total_floats());
  EXPECT_THAT(ErrorOf([&] { c.LoadParams(layout_, p); }),
              AllOf(HasSubstr(ShardFileName(0, 2)), HasSubstr("wrong range")));
}

TEST_F(ShardedCheckpoint, AnotherModelIsRefusedNamingTheTensor) {
  SaveOnRanks(1, tmp_.str(), layout_, full_, 1);
  ParamLayout other;
  other.Add("model.embed_tokens.weight", {256, 64});
  other.Add("model.layers.0.mlp.up_proj.weight", {301, 64});
  FlatBuffer p(other.total_floats() + 64);
  EXPECT_THAT(ErrorOf([&] { Checkpoint::Open(Dir(1)).LoadParams(other, p); }),
              AllOf(HasSubstr("up_proj"), HasSubstr("different model")));
}

TEST_F(ShardedCheckpoint, RefusesNonFiniteStateNamingTheTensor) {
  Full bad{FlatBuffer(layout_.total_floats()), FlatBuffer(layout_.total_floats()),
           FlatBuffer(layout_.total_floats())};
  std::memcpy(bad.params.data(), full_.params.data(), layout_.total_floats() * sizeof(float));
  bad.m.data()[layout_.Get("lm_head.weight").offset + 3] = std::nanf("");
  SingleProcessGroup group;
  ShardedCheckpointWriter w({.run_dir = tmp_.str()}, group, CpuBackend());
  EXPECT_THAT(ErrorOf([&] {
                w.Save(1, layout_,
                       {0, layout_.total_floats(), bad.params.data(), bad.m.data(), bad.v.data()},
                       1, nullptr, nullptr);
              }),
              AllOf(HasSubstr("Adam m"), HasSubstr("lm_head.weight")));
  EXPECT_FALSE(fs::exists(Dir(1)));
}

// Version 1 (model.safetensors + optim.safetensors) reads through the same range interface.
TEST_F(ShardedCheckpoint, VersionOneReadsAnyRange) {
  CheckpointContents c;
  c.step = 4;
  c.layout = &layout_;
  c.params = full_.params.data();
  c.adam_m = full_.m.data();
  c.adam_v = full_.v.data();
  c.adam_step = 9;
  WriteCheckpointDir(Dir(4), c);
  Checkpoint ck = Checkpoint::Open(Dir(4));
  EXPECT_EQ(ck.version(), 1);
  EXPECT_EQ(ck.adam_step(), 9);
  const ShardPlan plan(layout_.total_floats(), 4);
  for (int r = 0; r < 4; ++r) {
    const size_t b = plan.begin(r), e = plan.end(r);
    std::vector<float> p(e - b), v(e - b);
    ck.ReadRange(ShardField::kParams, layout_, b, e, p.data());
    ck.ReadRange(ShardField::kAdamV, layout_, b, e, v.data());
    EXPECT_TRUE(Same(p.data(), full_.params.data() + b, e - b)) << r;
    EXPECT_TRUE(Same(v.data(), full_.v.data() + b, e - b)) << r;
  }
}

}  // namespace
}  // namespace replica::parallel
