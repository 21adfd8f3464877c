// Checkpoints: bit-exact round trip, verification skipping truncated / corrupt / incomplete
// checkpoints with a message, keep-K pruning, background writes, propagated write failures and
// fault injection inside a checkpoint write.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "testing/util.h"
#include "ops/cpu/cpu_backend.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/writer.h"
#include "core/fault.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

struct State {
  ParamLayout layout;
  FlatBuffer params, m, v;
};

State MakeState(uint32_t seed) {
  State s;
  s.layout.Add("model.embed_tokens.weight", {64, 24});
  s.layout.Add("model.layers.0.self_attn.q_norm.weight", {7});
  s.layout.Add("lm_head.weight", {3, 2, 5});
  const size_t n = s.layout.total_floats();
  s.params = FlatBuffer(n);
  s.m = FlatBuffer(n);
  s.v = FlatBuffer(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (const ParamView& view : s.layout.views()) {
    for (size_t i = 0; i < view.numel; ++i) {
      s.params.data()[view.offset + i] = normal(rng);
      s.m.data()[view.offset + i] = normal(rng) * 1e-3f;
      s.v.data()[view.offset + i] = std::fabs(normal(rng)) * 1e-7f;
    }
  }
  // Values that a lossy path would mangle: signed zero, a subnormal, extremes.
  s.params.data()[0] = -0.0f;
  s.params.data()[1] = 1e-45f;
  s.params.data()[2] = 3.4028235e38f;
  return s;
}

bool SameViews(const ParamLayout& layout, const FlatBuffer& a, const FlatBuffer& b) {
  for (const ParamView& v : layout.views())
    if (std::memcmp(a.data() + v.offset, b.data() + v.offset, v.numel * sizeof(float)) != 0)
      return false;
  return true;
}

nlohmann::json StateJson(int64_t step) {
  return {{"step", step}, {"tokens", step * 4096}, {"loader", {{"epoch", 0}, {"offset", step}}},
          {"rng", "0123456789abcdef"}, {"world_size", 1}};
}

nlohmann::json ConfigJson() { return {{"model_type", "olmo3"}, {"hidden_size", 24}}; }

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogLevel(LogLevel::kWarn); }

  void SaveSync(CheckpointWriter& w, const State& s, int64_t step) {
    w.Save(step, s.layout, s.params, s.m, s.v, step + 100, StateJson(step), ConfigJson());
    w.Wait();
  }
  std::string Dir(int64_t step) const {
    return (run_ / "checkpoints" / CheckpointDirName(step)).string();
  }
  test::TempDir tmp_{"ckpt"};
  fs::path run_ = tmp_.path();
};

TEST_F(CheckpointTest, RoundTripIsBitExactAndSaveSnapshots) {
  State s = MakeState(1);
  State original = MakeState(1);
  CheckpointWriter w({.run_dir = run_.string(), .keep = 0}, CpuBackend());
  w.Reserve(s.layout);
  w.Save(7, s.layout, s.params, s.m, s.v, 1234, StateJson(7), ConfigJson());
  // Training continues while the write is in flight: the checkpoint must hold the values at Save().
  for (size_t i = 0; i < s.params.size(); ++i) {
    s.params.data()[i] += 1.0f;
    s.m.data()[i] = 0;
    s.v.data()[i] = 0;
  }
  w.Finish();
  EXPECT_EQ(w.LastStats().step, 7);
  EXPECT_GT(w.LastStats().bytes, 0u);

  auto found = FindLatestValid(run_.string());
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 7);
  EXPECT_EQ(found->dir, Dir(7));
  for (const char* f : {"model.safetensors", "optim.safetensors", "state.json", "config.json",
                        "MANIFEST.json", "DONE"})
    EXPECT_TRUE(fs::exists(fs::path(found->dir) / f)) << f;

  Checkpoint c = Checkpoint::Open(found->dir);
  EXPECT_EQ(c.step(), 7);
  EXPECT_EQ(c.state(), StateJson(7));
  EXPECT_EQ(c.model_config(), ConfigJson());
  State loaded = MakeState(99);
  c.LoadParams(loaded.layout, loaded.params);
  EXPECT_EQ(c.LoadOptimizer(loaded.layout, loaded.m, loaded.v), 1234);
  EXPECT_TRUE(SameViews(original.layout, original.params, loaded.params));
  EXPECT_TRUE(SameViews(original.layout, original.m, loaded.m));
  EXPECT_TRUE(SameViews(original.layout, original.v, loaded.v));
  EXPECT_TRUE(std::signbit(loaded.params.data()[0]));
}

TEST_F(CheckpointTest, SynchronousWriterRoundTrips) {
  State s = MakeState(11);
  CheckpointWriter w({.run_dir = run_.string(), .keep = 0, .background = false}, CpuBackend());
  w.Save(3, s.layout, s.params, s.m, s.v, 3, StateJson(3), ConfigJson());
  EXPECT_FALSE(w.InFlight());
  EXPECT_NO_THROW(VerifyCheckpoint(Dir(3)));
  State loaded = MakeState(12);
  Checkpoint c = Checkpoint::Open(Dir(3));
  c.LoadParams(loaded.layout, loaded.params);
  EXPECT_EQ(c.LoadOptimizer(loaded.layout, loaded.m, loaded.v), 3);
  EXPECT_TRUE(SameViews(s.layout, s.params, loaded.params));
  EXPECT_TRUE(SameViews(s.layout, s.m, loaded.m));
  EXPECT_TRUE(SameViews(s.layout, s.v, loaded.v));
}

TEST_F(CheckpointTest, LoadRefusesAnotherModel) {
  State s = MakeState(2);
  CheckpointWriter w({.run_dir = run_.string()}, CpuBackend());
  SaveSync(w, s, 1);
  Checkpoint c = Checkpoint::Open(Dir(1));

  ParamLayout wrong_shape;
  wrong_shape.Add("model.embed_tokens.weight", {24, 64});
  wrong_shape.Add("model.layers.0.self_attn.q_norm.weight", {7});
  wrong_shape.Add("lm_head.weight", {3, 2, 5});
  FlatBuffer buf(wrong_shape.total_floats());
  try {
    c.LoadParams(wrong_shape, buf);
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'model.embed_tokens.weight' has shape [64, 24], the model "
                                         "expects [24, 64]"),
              std::string::npos)
        << e.what();
  }
  ParamLayout missing;
  missing.Add("model.embed_tokens.weight", {64, 24});
  missing.Add("lm_head.weight", {3, 2, 5});
  FlatBuffer buf2(missing.total_floats());
  EXPECT_THROW(c.LoadParams(missing, buf2), Error);  // the file has an unexpected tensor
  ParamLayout extra = s.layout;
  extra.Add("model.norm.weight", {24});
  FlatBuffer buf3(extra.total_floats());
  EXPECT_THROW(c.LoadParams(extra, buf3), Error);  // the file lacks a tensor
}

enum class Damage { kTruncate, kFlipByte, kRemoveDone, kRemoveFile, kEditManifest };

class CheckpointDamageTest : public CheckpointTest,
                             public ::testing::WithParamInterface<std::pair<Damage, std::string>> {};

TEST_P(CheckpointDamageTest, DamagedNewestIsReportedAndSkipped) {
  State s = MakeState(3);
  CheckpointWriter w({.run_dir = run_.string()}, CpuBackend());
  SaveSync(w, s, 10);
  SaveSync(w, s, 20);
  const fs::path d = Dir(20);
  switch (GetParam().first) {
    case Damage::kTruncate:
      fs::resize_file(d / "model.safetensors", fs::file_size(d / "model.safetensors") - 100);
      break;
    case Damage::kFlipByte: {
      std::fstream f(d / "optim.safetensors", std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-50, std::ios::end);
      char c;
      f.read(&c, 1);
      c ^= 0x10;
      f.seekp(-50, std::ios::end);
      f.write(&c, 1);
      break;
    }
    case Damage::kRemoveDone:
      fs::remove(d / "DONE");
      break;
    case Damage::kRemoveFile:
      fs::remove(d / "state.json");
      break;
    case Damage::kEditManifest: {
      std::string m = ReadFile((d / "MANIFEST.json").string());
      m.replace(m.find("\"step\": 20"), 10, "\"step\": 21");
      std::ofstream(d / "MANIFEST.json", std::ios::binary) << m;
      break;
    }
  }
  ::testing::internal::CaptureStderr();
  auto found = FindLatestValid(run_.string());
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 10);
  EXPECT_NE(err.find("skipping checkpoint " + d.string()), std::string::npos) << err;
  EXPECT_NE(err.find(GetParam().second), std::string::npos) << err;
  EXPECT_THROW(VerifyCheckpoint(d.string()), Error);
  EXPECT_NO_THROW(VerifyCheckpoint(Dir(10)));
}

INSTANTIATE_TEST_SUITE_P(
    All, CheckpointDamageTest,
    ::testing::Values(std::make_pair(Damage::kTruncate, "model.safetensors: size"),
                      std::make_pair(Damage::kFlipByte, "optim.safetensors: checksum mismatch"),
                      std::make_pair(Damage::kRemoveDone, "no DONE marker"),
                      std::make_pair(Damage::kRemoveFile, "state.json: missing"),
                      std::make_pair(Damage::kEditManifest, "DONE: does not match")));

TEST_F(CheckpointTest, NoCheckpointMeansFreshRun) {
  EXPECT_FALSE(FindLatestValid(run_.string()).has_value());
  EXPECT_THROW(ResolveCheckpoint(run_.string()), Error);
}

// A checkpoints path that exists but cannot be listed is not "no checkpoints": taking it as a fresh
// start would truncate the run's metrics and fail only at the first save.
TEST_F(CheckpointTest, UnlistableCheckpointsPathIsAnError) {
  auto error_of = [&] {
    try {
      FindLatestValid(run_.string());
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const fs::path ckpts = run_ / "checkpoints";
  std::ofstream(ckpts) << "not a directory";
  std::string e = error_of();
  EXPECT_NE(e.find(ckpts.string()), std::string::npos) << e;
  EXPECT_NE(e.find("regular file"), std::string::npos) << e;
  fs::remove(ckpts);
  fs::create_symlink(run_ / "loop_b", run_ / "loop_a");
  fs::create_symlink(run_ / "loop_a", run_ / "loop_b");
  fs::create_symlink(run_ / "loop_a", ckpts);  // a symlink loop
  e = error_of();
  EXPECT_NE(e.find(ckpts.string()), std::string::npos) << e;
  EXPECT_NE(e.find("cannot"), std::string::npos) << e;
  EXPECT_THROW(ListCheckpointDirs(ckpts.string()), Error);
  fs::remove(ckpts);
  EXPECT_FALSE(FindLatestValid(run_.string()).has_value());  // absent: a fresh run
}

// A checkpoint holding NaN or Inf (written by an older build, or edited) is refused on load,
// naming the file and the tensor.
TEST_F(CheckpointTest, NonFiniteValuesAreRefusedOnLoad) {
  State s = MakeState(9);
  s.params.data()[s.layout.Get("lm_head.weight").offset + 4] = NAN;
  s.v.data()[s.layout.Get("model.layers.0.self_attn.q_norm.weight").offset + 1] = INFINITY;
  // Written around CheckpointWriter, which refuses such state (SaveRefusesNonFiniteState).
  CheckpointContents contents;
  contents.step = 3;
  contents.adam_step = 3;
  contents.layout = &s.layout;
  contents.params = s.params.data();
  contents.adam_m = s.m.data();
  contents.adam_v = s.v.data();
  contents.state = StateJson(3);
  contents.model_config = ConfigJson();
  WriteCheckpointDir(Dir(3), contents);
  Checkpoint c = Checkpoint::Open(Dir(3));
  State out = MakeState(10);
  std::string e;
  try {
    c.LoadParams(out.layout, out.params);
  } catch (const Error& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
  EXPECT_NE(e.find("lm_head.weight"), std::string::npos) << e;
  e.clear();
  try {
    c.LoadOptimizer(out.layout, out.m, out.v);
  } catch (const Error& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("v.model.layers.0.self_attn.q_norm.weight"), std::string::npos) << e;
}

// Save() refuses parameters or Adam state with NaN/Inf, naming the tensor, and writes nothing.
TEST_F(CheckpointTest, SaveRefusesNonFiniteState) {
  for (int which = 0; which < 3; ++which) {
    State s = MakeState(11);
    FlatBuffer& buf = which == 0 ? s.params : which == 1 ? s.m : s.v;
    buf.data()[s.layout.Get("lm_head.weight").offset + 2] = which == 1 ? -INFINITY : NAN;
    CheckpointWriter w({.run_dir = run_.string(), .keep = 0}, CpuBackend());
    std::string e;
    try {
      SaveSync(w, s, 4);
    } catch (const Error& ex) {
      e = ex.what();
    }
    EXPECT_NE(e.find("checkpoint step 4"), std::string::npos) << e;
    EXPECT_NE(e.find("'lm_head.weight'"), std::string::npos) << e;
    EXPECT_NE(e.find(which == 0 ? "parameters" : which == 1 ? "Adam m" : "Adam v"),
              std::string::npos) << e;
    EXPECT_FALSE(fs::exists(Dir(4)));
  }
}

TEST_F(CheckpointTest, KeepsLastKCompleteCheckpoints) {
  State s = MakeState(4);
  CheckpointWriter w({.run_dir = run_.string(), .keep = 2}, CpuBackend());
  for (int64_t step : {10, 20, 30, 40}) SaveSync(w, s, step);
  std::vector<int64_t> steps;
  for (const CheckpointDir& d : ListCheckpointDirs((run_ / "checkpoints").string()))
    steps.push_back(d.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{30, 40}));
}

TEST_F(CheckpointTest, ResaveAfterFallbackReplacesAbandonedTrajectory) {
  State s = MakeState(5);
  {
    CheckpointWriter w({.run_dir = run_.string(), .keep = 3}, CpuBackend());
    for (int64_t step : {10, 20, 30}) SaveSync(w, s, step);
  }
  fs::remove(fs::path(Dir(30)) / "DONE");  // incomplete newest: resume falls back to 20
  fs::create_directories(run_ / "checkpoints" / "step-00000040.tmp");  // crashed write
  {
    SetLogLevel(LogLevel::kError);
    auto found = FindLatestValid(run_.string());
    SetLogLevel(LogLevel::kWarn);
    ASSERT_EQ(found->step, 20);
    CheckpointWriter w({.run_dir = run_.string(), .keep = 3}, CpuBackend());
    EXPECT_FALSE(fs::exists(run_ / "checkpoints" / "step-00000040.tmp"));
    State s2 = MakeState(6);
    SaveSync(w, s2, 25);  // the resumed trajectory: step-30 belongs to the abandoned one
    EXPECT_FALSE(fs::exists(Dir(30)));
    SaveSync(w, s2, 30);
  }
  EXPECT_EQ(FindLatestValid(run_.string())->step, 30);
  State loaded = MakeState(7);
  Checkpoint::Open(Dir(30)).LoadParams(loaded.layout, loaded.params);
  State s2 = MakeState(6);
  EXPECT_TRUE(SameViews(s2.layout, s2.params, loaded.params));
}

TEST_F(CheckpointTest, BackgroundWritesComplete) {
  State s = MakeState(8);
  CheckpointWriter w({.run_dir = run_.string(), .keep = 0, .background = true}, CpuBackend());
  for (int64_t step = 1; step <= 5; ++step)
    w.Save(step, s.layout, s.params, s.m, s.v, step, StateJson(step), ConfigJson());
  w.Finish();
  EXPECT_FALSE(w.InFlight());
  for (int64_t step = 1; step <= 5; ++step) EXPECT_NO_THROW(VerifyCheckpoint(Dir(step)));
}

// Death tests run in the default "fast" style (fork at the EXPECT_EXIT): the child continues with
// this process's state and run directory; the writer keeps OpenMP out of small copies for that.

// A file-size limit makes write() fail with EFBIG inside the background thread, exactly as a full
// disk makes it fail with ENOSPC (tests/cli/checkpoint_fulldisk.sh covers the real full disk).
TEST_F(CheckpointTest, BackgroundFailureIsRethrownAndLeavesPreviousIntact) {
  State s = MakeState(9);
  CheckpointWriter w({.run_dir = run_.string(), .keep = 1}, CpuBackend());
  SaveSync(w, s, 10);
  const std::string before = FileXxh3Hex(fs::path(Dir(10)) / "model.safetensors");

  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 1000;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  w.Save(20, s.layout, s.params, s.m, s.v, 20, StateJson(20), ConfigJson());
  std::string message;
  try {
    w.Save(30, s.layout, s.params, s.m, s.v, 30, StateJson(30), ConfigJson());  // rethrows 20's
  } catch (const Error& e) {
    message = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);

  EXPECT_NE(message.find("checkpoint step 20"), std::string::npos) << message;
  EXPECT_NE(message.find(Dir(20) + ".tmp/model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(Dir(20) + ".tmp"));
  EXPECT_FALSE(fs::exists(Dir(20)));
  EXPECT_FALSE(fs::exists(Dir(30)));  // Save(30) threw before starting
  EXPECT_NO_THROW(VerifyCheckpoint(Dir(10)));
  EXPECT_EQ(FileXxh3Hex(fs::path(Dir(10)) / "model.safetensors"), before);
  // The writer is usable again once space is back.
  SaveSync(w, s, 30);
  EXPECT_EQ(FindLatestValid(run_.string())->step, 30);
}

TEST(Fault, ParsesSpec) {
  auto s = fault::ParseFaultSpec("step:17");
  EXPECT_EQ(s.kill_at_step, 17);
  EXPECT_FALSE(s.kill_in_checkpoint.has_value());
  s = fault::ParseFaultSpec("checkpoint:20:before-done,step:3");
  EXPECT_EQ(s.kill_at_step, 3);
  EXPECT_EQ(s.kill_in_checkpoint, 20);
  EXPECT_EQ(s.checkpoint_phase, fault::CheckpointPhase::kBeforeDone);
  EXPECT_EQ(fault::ParseFaultSpec("checkpoint:5").checkpoint_phase, fault::CheckpointPhase::kFiles);
  EXPECT_FALSE(fault::ParseFaultSpec("").kill_at_step.has_value());
  for (const char* bad : {"step", "step:", "step:x", "step:-1", "disk:3", "checkpoint:4:after"})
    EXPECT_THROW(fault::ParseFaultSpec(bad), Error) << bad;
}

TEST(Fault, EnvironmentOverridesConfig) {
  setenv("REPLICA_FAULT", "checkpoint:8:before-done", 1);
  fault::Configure({.kill_at_step = 5, .kill_in_checkpoint = {}});
  unsetenv("REPLICA_FAULT");
  EXPECT_EQ(fault::Current().kill_at_step, 5);
  EXPECT_EQ(fault::Current().kill_in_checkpoint, 8);
  fault::Configure({});
  EXPECT_FALSE(fault::Current().kill_at_step.has_value());
  fault::MaybeKill(fault::FaultPoint::kStep, 5);  // not configured: returns
}

TEST(Fault, KillsAtStep) {
    EXPECT_EXIT(
      {
        fault::Configure({.kill_at_step = 5, .kill_in_checkpoint = {}});
        fault::MaybeKill(fault::FaultPoint::kStep, 4);
        fault::MaybeKill(fault::FaultPoint::kCheckpointFiles, 5);
        fault::MaybeKill(fault::FaultPoint::kStep, 5);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "injected SIGKILL after step 5");
}

class CheckpointFaultTest : public CheckpointTest,
                            public ::testing::WithParamInterface<fault::CheckpointPhase> {};

TEST_P(CheckpointFaultTest, KillInsideCheckpointWriteLeavesPreviousValid) {
    State s = MakeState(10);
  {
    CheckpointWriter w({.run_dir = run_.string()}, CpuBackend());
    SaveSync(w, s, 10);
  }
  EXPECT_EXIT(
      {
        fault::Configure(
            {.kill_at_step = {}, .kill_in_checkpoint = 20, .checkpoint_phase = GetParam()});
        CheckpointWriter w({.run_dir = run_.string()}, CpuBackend());
        SaveSync(w, s, 20);
        std::exit(0);
      },
      ::testing::KilledBySignal(SIGKILL), "injected SIGKILL");
  const bool before_done = GetParam() == fault::CheckpointPhase::kBeforeDone;
  EXPECT_EQ(fs::exists(fs::path(Dir(20) + ".tmp") / "model.safetensors"), !before_done);
  EXPECT_EQ(fs::exists(fs::path(Dir(20)) / "MANIFEST.json"), before_done);
  EXPECT_FALSE(fs::exists(fs::path(Dir(20)) / "DONE"));
  ::testing::internal::CaptureStderr();
  auto found = FindLatestValid(run_.string());
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->step, 10);
  if (before_done) {
    EXPECT_NE(err.find("no DONE marker"), std::string::npos) << err;
  }
  // Restarting and saving step 20 again cleans up and succeeds.
  CheckpointWriter w({.run_dir = run_.string()}, CpuBackend());
  SaveSync(w, s, 20);
  EXPECT_EQ(FindLatestValid(run_.string())->step, 20);
  EXPECT_FALSE(fs::exists(Dir(20) + ".tmp"));
}

INSTANTIATE_TEST_SUITE_P(Phases, CheckpointFaultTest,
                         ::testing::Values(fault::CheckpointPhase::kFiles,
                                           fault::CheckpointPhase::kBeforeDone));

}  // namespace
}  // namespace replica
