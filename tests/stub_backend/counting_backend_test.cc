// Adding a backend is one folder: the counting backend (counting_backend.h) registers itself here,
// passes every op of the table against the fp32 CPU reference, and a training run selects it by
// `compute.device: counting` — computing through it, with the bits of the CPU run.
#include "stub_backend/counting_backend.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run/run_config.h"
#include "stub_backend/train_run.h"
#include "testing/backend_ops.h"
#include "testing/util.h"
#include "train/trainer.h"

REPLICA_REGISTER_BACKEND(counting, "counting", ::replica::Precision::kFp32,
                         ::replica::stub::Counting())

namespace replica {
namespace {

TEST(CountingBackend, IsRegisteredAndMatchesTheCpuReferenceOpByOp) {
  const Backend& b = SelectBackend("counting", Precision::kFp32);
  EXPECT_EQ(&b, &stub::Counting());
  const int64_t before = stub::Counting().calls();
  testing::ExpectBackendMatchesCpu(b);
  EXPECT_GT(stub::Counting().calls(), before);
}

TEST(CountingBackend, UnknownDevicesListIt) {
  std::string e;
  try {
    SelectBackend("tpu", Precision::kFp32);
  } catch (const Error& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("registered devices: counting, cpu, sealed"), std::string::npos) << e;
  e.clear();
  try {
    SelectBackend("counting", Precision::kBf16);
  } catch (const Error& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("device 'counting' has no bf16 backend (it has fp32)"), std::string::npos) << e;
}

using stub::ReadAll;
using stub::TrainLines;

TrainSummary TrainOn(const std::string& device, const test::TempDir& tmp) {
  const RunConfig c = RunConfig::FromYaml(R"(
model: {vocab_size: 256, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
        num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1.0e-6, rope_theta: 10000,
        sliding_window: 8, eos_token_id: 255, pad_token_id: 254}
data: {paths: [tokens.npy], seq_len: 16, seed: 1}
train: {max_steps: 3, global_batch_instances: 4, micro_batch_instances: 2, threads: 1}
optim: {lr: 1.0e-3}
checkpoint: {interval: 3}
compute: {device: )" + device + "}\n",
                                          tmp.str());
  EXPECT_EQ(c.compute.device, device);
  TrainerOptions o;
  o.config = c;
  o.run_dir = tmp.File("run-" + device);
  o.progress = false;
  o.peak_flops = 1e12;
  return Train(o);
}

TEST(CountingBackend, SelectedByComputeDeviceTrainsWithTheCpuBits) {
  const test::TempDir tmp("counting");
  stub::WriteTokens(tmp.File("tokens.npy"));

  const TrainSummary cpu = TrainOn("cpu", tmp);
  const int64_t calls = stub::Counting().calls(), matmuls = stub::Counting().matmul_calls();
  const TrainSummary counting = TrainOn("counting", tmp);
  EXPECT_GT(stub::Counting().calls() - calls, 100);  // the run computed through it
  EXPECT_GT(stub::Counting().matmul_calls() - matmuls, 10);

  EXPECT_EQ(TrainLines(cpu.run_dir), TrainLines(counting.run_dir));
  ASSERT_EQ(TrainLines(cpu.run_dir).size(), 3u);
  ASSERT_FALSE(cpu.last_checkpoint.empty());
  const std::string shard = "/shard-00000-of-00001.safetensors";
  EXPECT_EQ(ReadAll(cpu.last_checkpoint + shard), ReadAll(counting.last_checkpoint + shard));
  // The canonical config names a device only when it is not cpu, so cpu runs hash as before.
  EXPECT_EQ(ReadAll(cpu.run_dir + "/config.yaml").find("device"), std::string::npos);
  const std::string yaml = ReadAll(counting.run_dir + "/config.yaml");
  EXPECT_NE(yaml.find("device: \"counting\""), std::string::npos) << yaml;
}

}  // namespace
}  // namespace replica
