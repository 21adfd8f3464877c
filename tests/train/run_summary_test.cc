// ResolvedConfigLines (what `replica train` prints before its first step): the model's shape, the
// data (files, or each mixture source with its weight and tokens), the optimizer and the LR
// schedule with the LR at the probe steps, all as the config and the opened data resolve them.
#include "train/run_summary.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "optim/schedule.h"
#include "testing/util.h"
#include "train/train_data.h"

namespace replica {
namespace {

void WriteTokens(const std::string& path, int count) {
  std::vector<uint32_t> t(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) t[i] = static_cast<uint32_t>(i % 250);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(t.data()), static_cast<std::streamsize>(4 * t.size()));
}

constexpr const char* kModel = R"(
model: {vocab_size: 256, hidden_size: 64, intermediate_size: 256, num_hidden_layers: 4,
        num_attention_heads: 4, num_key_value_heads: 2, rms_norm_eps: 1.0e-6, rope_theta: 500000,
        sliding_window: 8, eos_token_id: 255, pad_token_id: 254}
train: {max_steps: 10, global_batch_instances: 4}
optim: {lr: 1.0e-3, schedule: {type: cosine, warmup: 4, alpha_f: 0.1}}
)";

std::vector<std::string> Lines(const RunConfig& c) {
  const auto d = OpenTrainingData(c);
  return ResolvedConfigLines(c, *d, d->num_instances() / 4);
}

bool Contains(const std::string& line, const std::string& part) {
  return line.find(part) != std::string::npos;
}

TEST(RunSummary, FilesModelOptimAndSchedule) {
  const test::TempDir tmp("runsummary");
  WriteTokens(tmp.File("a.npy"), 32 * 20);
  const RunConfig c = RunConfig::FromYaml(
      std::string(kModel) + "data: {paths: [a.npy], seq_len: 32, seed: 3}\n", tmp.str());
  const std::vector<std::string> l = Lines(c);
  ASSERT_EQ(l.size(), 4u);
  EXPECT_TRUE(Contains(l[0], "model: olmo3, 4 layers (3 sliding-window 8, 1 full), hidden 64, "
                             "MLP 256, 4 heads / 2 kv heads of 16, vocab 256"))
      << l[0];
  EXPECT_TRUE(Contains(l[0], std::to_string(c.model.NumParams()) + " params")) << l[0];
  EXPECT_TRUE(Contains(l[0], "RoPE all layers plain (theta 500000")) << l[0];
  EXPECT_EQ(l[1],
            "data: 1 path(s), 20 instances of 32 tokens (640 tokens, uint32), 5 global batches per "
            "epoch, order seed 3");
  EXPECT_TRUE(Contains(l[2], "optim: AdamW betas (0.9, 0.95), eps 1e-08")) << l[2];
  EXPECT_TRUE(Contains(l[2], "grad clip 1, z-loss 1e-05")) << l[2];
  // schedule: warm-up 4 steps to 1e-3, cosine to 1e-4 at t_max = max_steps = 10; probes 1, 4, 7, 10
  EXPECT_EQ(ScheduleProbeSteps(c), (std::vector<int64_t>{1, 4, 7, 10}));
  const ScheduleConfig& s = c.optim.schedule;
  EXPECT_EQ(l[3], fmt::format("schedule: cosine, peak 0.001 after 4 warm-up steps from 0, 0.0001 at "
                              "t_max 10; lr at step 1 {:.4g}, 4 {:.4g}, 7 {:.4g}, 10 {:.4g}",
                              LrAt(s, 1e-3, 1), LrAt(s, 1e-3, 4), LrAt(s, 1e-3, 7),
                              LrAt(s, 1e-3, 10)));
  EXPECT_EQ(fmt::format("{:.4g}", LrAt(s, 1e-3, 1)), "0.00025");
}

TEST(RunSummary, MixtureSourcesWithWeightsAndTokens) {
  const test::TempDir tmp("runsummary-mix");
  WriteTokens(tmp.File("web.npy"), 32 * 40);
  WriteTokens(tmp.File("books.npy"), 32 * 10);
  const RunConfig c = RunConfig::FromYaml(std::string(kModel) + R"(
data:
  seq_len: 32
  seed: 3
  mixture_tokens: 960
  mixture_seed: 5
  mixture:
    - {name: web, paths: [web.npy], weight: 2}
    - {name: books, paths: [books.npy], weight: 1}
)",
                                          tmp.str());
  const std::vector<std::string> l = Lines(c);
  EXPECT_TRUE(Contains(l[1], "data: mixture of 2 sources (mixture seed 5), 30 instances of 32 "
                             "tokens (960 tokens, uint32)"))
      << l[1];
  EXPECT_TRUE(Contains(l[1], "; web (weight 2): 20 of 40 instances, 640 tokens")) << l[1];
  EXPECT_TRUE(Contains(l[1], "; books (weight 1): 10 of 10 instances, 320 tokens")) << l[1];
}

TEST(RunSummary, ProbeStepsStayInTheRun) {
  const test::TempDir tmp("runsummary-probe");
  WriteTokens(tmp.File("a.npy"), 32 * 20);
  RunConfig c = RunConfig::FromYaml(
      std::string(kModel) + "data: {paths: [a.npy], seq_len: 32, seed: 3}\n", tmp.str());
  c.train.max_steps = 1;
  EXPECT_EQ(ScheduleProbeSteps(c), std::vector<int64_t>{1});
  c.train.max_steps = 3;
  c.optim.schedule.warmup = 0;
  EXPECT_EQ(ScheduleProbeSteps(c), (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace replica
