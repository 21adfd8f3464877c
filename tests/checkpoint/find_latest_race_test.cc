// FindLatestValid against a writer that prunes as it goes (checkpoint.keep 1): a checkpoint that
// disappears while it is being verified was pruned because a newer one completed, so the search
// lists the directory again instead of answering "none". A reader running beside such a writer
// finds a valid checkpoint on every call once the first one exists. A read that loses its checkpoint
// to the pruner halfway (ReadNewestCheckpoint) reads the newest one again, and only then.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/writer.h"
#include "core/log.h"
#include "testing/util.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

TEST(FindLatestValidRace, APrunedCandidateMakesItLookAgain) {
  SetLogLevel(LogLevel::kError);  // the skips of a live race are expected
  test::TempDir tmp{"ckpt_race"};
  const std::string run = tmp.path().string();
  ParamLayout layout;
  layout.Add("model.embed_tokens.weight", {512, 256});
  const size_t n = layout.total_floats();
  FlatBuffer params(n), m(n), v(n);
  for (size_t i = 0; i < n; ++i) params.data()[i] = static_cast<float>(i % 97) * 1e-3f;

  CheckpointWriter writer({.run_dir = run, .keep = 1, .background = false}, CpuBackend());
  writer.Save(1, layout, params, m, v, 1, {{"step", 1}}, {{"model_type", "olmo3"}});
  std::atomic<bool> stop{false};
  std::thread t([&] {
    for (int64_t step = 2; step <= 150 && !stop; ++step)
      writer.Save(step, layout, params, m, v, step, {{"step", step}}, {{"model_type", "olmo3"}});
    stop = true;
  });
  int64_t calls = 0, misses = 0, last = 0;
  while (!stop) {
    const auto found = FindLatestValid(run);
    ++calls;
    if (!found) {
      ++misses;
    } else {
      EXPECT_GE(found->step, last);
      last = found->step;
    }
  }
  t.join();
  SetLogLevel(LogLevel::kInfo);
  EXPECT_EQ(misses, 0) << "of " << calls << " searches beside a pruning writer";
  EXPECT_GT(calls, 10);
}

// A run directory with a keep-1 writer that has saved step 1.
class ReadNewestCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetLogLevel(LogLevel::kError);
    layout_.Add("model.embed_tokens.weight", {64, 32});
    const size_t n = layout_.total_floats();
    params_ = FlatBuffer(n), m_ = FlatBuffer(n), v_ = FlatBuffer(n);
    Save(1);
  }
  void TearDown() override { SetLogLevel(LogLevel::kInfo); }
  void Save(int64_t step) {  // and prunes every older one
    writer_.Save(step, layout_, params_, m_, v_, step, {{"step", step}}, {{"model_type", "olmo3"}});
  }
  test::TempDir tmp_{"read_newest"};
  const std::string run_ = tmp_.path().string();
  ParamLayout layout_;
  FlatBuffer params_, m_, v_;
  CheckpointWriter writer_{{.run_dir = run_, .keep = 1, .background = false}, CpuBackend()};
};

TEST_F(ReadNewestCheckpointTest, ACheckpointPrunedMidReadIsReadAgainAtTheNewest) {
  std::vector<int64_t> steps;
  ReadNewestCheckpoint(run_, [&](const CheckpointInfo& info) {
    steps.push_back(info.step);
    if (steps.size() == 1) {
      Save(2);  // the writer completes step 2 and removes step 1 under the reader
      EXPECT_FALSE(fs::exists(info.dir));
      Fail("{}: cannot open: No such file or directory", info.dir);
    }
  });
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2}));
}

TEST_F(ReadNewestCheckpointTest, AnErrorAboutTheNewestCheckpointIsNotRetried) {
  int calls = 0;
  const std::string e = test::ErrorOf([&] {
    ReadNewestCheckpoint(run_, [&](const CheckpointInfo&) {
      ++calls;
      Fail("tensor 'x' holds nan");
    });
  });
  EXPECT_EQ(e, "tensor 'x' holds nan");
  EXPECT_EQ(calls, 1);
}

TEST_F(ReadNewestCheckpointTest, ACheckpointNamedDirectlyIsNotReplaced) {
  const std::string dir = FindLatestValid(run_)->dir;
  int calls = 0;
  const std::string e = test::ErrorOf([&] {
    ReadNewestCheckpoint(dir, [&](const CheckpointInfo&) {
      ++calls;
      Save(2);
      Fail("cannot open");
    });
  });
  EXPECT_EQ(e, "cannot open");
  EXPECT_EQ(calls, 1);
}

TEST_F(ReadNewestCheckpointTest, RetriesAreBounded) {
  int calls = 0;
  int64_t step = 1;
  const std::string e = test::ErrorOf([&] {
    ReadNewestCheckpoint(run_, [&](const CheckpointInfo&) {
      ++calls;
      Save(++step);
      Fail("cannot open");
    });
  });
  EXPECT_EQ(calls, kCheckpointReadAttempts);
  EXPECT_NE(e.find(fmt::format("replaced while it was read, {} times in a row",
                              kCheckpointReadAttempts)),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("last: cannot open"), std::string::npos) << e;
}

TEST_F(ReadNewestCheckpointTest, LoadNewestParamsReadsTheReplacement) {
  Checkpoint ckpt = Checkpoint::Open(FindLatestValid(run_)->dir);
  params_.data()[3] = 0.5f;
  Save(2);  // step 1 is gone before its parameters are read
  FlatBuffer out(layout_.total_floats());
  LoadNewestParams(run_, ckpt, layout_, out);
  EXPECT_EQ(ckpt.step(), 2);
  EXPECT_EQ(out.data()[3], 0.5f);
}

}  // namespace
}  // namespace replica
