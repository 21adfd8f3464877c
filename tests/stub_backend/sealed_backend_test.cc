// A backend whose memory the host cannot touch (sealed_backend.h): every op of the table matches
// the CPU reference through it, a host access of its memory faults, and whole training runs —
// one process, ZeRO-1 and ZeRO-3 on two ranks, checkpoints and resume — run on it with the CPU
// run's bits and byte-identical checkpoint files: every read and write of model, gradient,
// optimizer and store memory outside the ops goes through CopyFromHost / CopyToHost.
#include "stub_backend/sealed_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ops/registry.h"
#include "parallel/checkpoint_group.h"
#include "parallel/data_parallel.h"
#include "parallel/thread_group.h"
#include "parallel/zero3.h"
#include "run/run_config.h"
#include "stub_backend/train_run.h"
#include "testing/backend_ops.h"
#include "testing/util.h"
#include "train/trainer.h"

REPLICA_REGISTER_BACKEND(sealed, "sealed", ::replica::Precision::kFp32,
                         ::replica::stub::Sealed())

namespace replica {
namespace {

TEST(SealedBackend, IsRegisteredAndMatchesTheCpuReferenceOpByOp) {
  const Backend& b = SelectBackend("sealed", Precision::kFp32);
  EXPECT_EQ(&b, &stub::Sealed());
  EXPECT_FALSE(b.is_host());
  testing::ExpectBackendMatchesCpu(b);
}

TEST(SealedBackend, ItsBuffersAreDeviceMemoryTheHostCannotTouch) {
  const Backend& b = stub::Sealed();
  Buffer buf = b.Allocate(DType::kF32, 100);
  EXPECT_EQ(buf.location(), Location::kDevice);
  EXPECT_THROW(buf.Zero(), Error);  // a host memset refuses device memory
  std::vector<float> in(100, 2.5f), out(100, 0.0f);
  b.CopyFromHost(buf.raw(), in.data(), 400);
  b.Scale(static_cast<float*>(buf.raw()), 100, 2.0);
  b.CopyToHost(out.data(), buf.raw(), 400);
  EXPECT_EQ(out[99], 5.0f);
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer owns SIGSEGV; the fault is checked in the plain build";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(static_cast<volatile float*>(buf.raw())[7] = 1.0f,
               "host code touched backend memory at .* \\(offset 28 of a 4096-byte buffer\\)");
}

using stub::ReadAll;
using stub::TrainLines;

struct Run {
  std::string device, sharding = "zero1";
  int world = 1;
  int64_t max_steps = 4;
};

// Trains `run` into run_dir as `replica train` does (resuming from run_dir's last checkpoint when
// there is one); rank 0's summary.
TrainSummary TrainOn(const Run& run, const std::string& run_dir, const test::TempDir& tmp) {
  const RunConfig c = RunConfig::FromYaml(R"(
model: {vocab_size: 256, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
        num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1.0e-6, rope_theta: 10000,
        sliding_window: 8, eos_token_id: 255, pad_token_id: 254}
data: {paths: [tokens.npy], seq_len: 16, seed: 1}
train: {max_steps: )" + std::to_string(run.max_steps) + R"(, global_batch_instances: 4,
        micro_batch_instances: 1, threads: 1, grad_accumulation: )" +
                                          (run.sharding == "zero3" ? "sequential" : "tree") + R"(}
optim: {lr: 1.0e-3, schedule: {t_max: 4}}
checkpoint: {interval: 2}
parallel: {sharding: )" + run.sharding + R"(}
compute: {device: )" + run.device + "}\n",
                                          tmp.str());
  TrainSummary summary;
  std::mutex mu;
  parallel::RunThreadGroup(run.world, [&](parallel::Communicator& comm) {
    TrainerOptions o;
    o.config = c;
    o.run_dir = run_dir;
    o.progress = false;
    o.peak_flops = 1e12;
    o.rank = comm.rank();
    o.world = comm.world();
    std::unique_ptr<GradReducer> reducer;
    std::unique_ptr<parallel::CommunicatorCheckpointGroup> group;
    if (run.sharding == "zero3") {
      reducer = std::make_unique<parallel::Zero3>(comm, c);
    } else if (comm.world() > 1) {
      reducer = std::make_unique<parallel::DataParallel>(comm, c);
    }
    if (comm.world() > 1) {
      group = std::make_unique<parallel::CommunicatorCheckpointGroup>(comm);
      o.checkpoint_group = group.get();
    }
    o.reducer = reducer.get();
    TrainSummary s = Train(o);
    std::lock_guard<std::mutex> lock(mu);
    if (comm.rank() == 0) summary = s;
  });
  return summary;
}

// Every file of a checkpoint directory that holds tensors or state, by name.
std::vector<std::string> CheckpointFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

void ExpectSameRun(const TrainSummary& got, const TrainSummary& want, const std::string& what) {
  EXPECT_EQ(TrainLines(got.run_dir), TrainLines(want.run_dir)) << what;
  ASSERT_FALSE(want.last_checkpoint.empty()) << what;
  ASSERT_FALSE(got.last_checkpoint.empty()) << what;
  const std::vector<std::string> files = CheckpointFiles(want.last_checkpoint);
  EXPECT_EQ(CheckpointFiles(got.last_checkpoint), files) << what;
  for (const std::string& f : files) {
    if (f.find(".safetensors") == std::string::npos) continue;
    EXPECT_EQ(ReadAll(got.last_checkpoint + "/" + f), ReadAll(want.last_checkpoint + "/" + f))
        << what << ": " << f;
  }
}

// Strict mode for a scope: every tensor an op is given must be the backend's memory.
struct Strict {
  Strict() { stub::SealedBackend::SetStrict(true); }
  ~Strict() { stub::SealedBackend::SetStrict(false); }
};

// One process, two ranks under ZeRO-1 and two under ZeRO-3: 4 steps straight on the CPU, and on
// the sealed backend (strict) 2 steps then a resume to 4.
TEST(SealedBackend, TrainingCheckpointsAndResumeRunOnItWithTheCpuBits) {
  const test::TempDir tmp("sealed");
  const Strict strict;
  stub::WriteTokens(tmp.File("tokens.npy"));
  for (const auto& [sharding, world] :
       std::vector<std::pair<std::string, int>>{{"zero1", 1}, {"zero1", 2}, {"zero3", 2}}) {
    const std::string tag = sharding + "-" + std::to_string(world);
    const TrainSummary cpu = TrainOn({"cpu", sharding, world, 4}, tmp.File("cpu-" + tag), tmp);
    const int64_t copies = stub::SealedBackend::Copies();
    const std::string dir = tmp.File("sealed-" + tag);
    TrainOn({"sealed", sharding, world, 2}, dir, tmp);
    const TrainSummary sealed = TrainOn({"sealed", sharding, world, 4}, dir, tmp);
    EXPECT_FALSE(sealed.resumed_from.empty()) << tag;
    EXPECT_GT(stub::SealedBackend::Copies() - copies, 0) << tag;
    ASSERT_EQ(TrainLines(cpu.run_dir).size(), 4u) << tag;
    ExpectSameRun(sealed, cpu, tag);
  }
  EXPECT_EQ(stub::SealedBackend::LiveBytes(), 0u);  // every buffer released
}

}  // namespace
}  // namespace replica
