// DataParallel (the trainer's ZeRO-1 RankReducer) under the trainer's own TrainStep: R = 2, 4, 8
// ranks as threads, each with its own model and its rows r::R of every batch, reproduce the
// single-process steps bit for bit — losses, grad norms, parameters and (gathered) Adam state.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>
#include <vector>

#include "core/error.h"
#include "parallel/data_parallel.h"
#include "parallel/thread_group.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "train/init.h"
#include "run/run_config.h"
#include "train/train_step.h"

namespace replica::parallel {
namespace {

constexpr int64_t kInstances = 8, kMicro = 1, kSeq = 16, kSteps = 3;

ModelConfig TinyModel() {
  return ModelConfig::FromHfJson({{"model_type", "olmo3"},
                                  {"vocab_size", 64},
                                  {"hidden_size", 32},
                                  {"intermediate_size", 64},
                                  {"num_hidden_layers", 2},
                                  {"num_attention_heads", 4},
                                  {"num_key_value_heads", 2},
                                  {"rms_norm_eps", 1e-6},
                                  {"rope_theta", 10000.0},
                                  {"sliding_window", 4},
                                  {"max_position_embeddings", 64}},
                                 "tiny test model");
}

RunConfig TinyRun() {
  RunConfig c;
  c.model = TinyModel();
  c.train.global_batch_instances = kInstances;
  c.train.micro_batch_instances = kMicro;
  c.data.seq_len = kSeq;
  return c;
}

// Global batch of step s: ids and labels [kInstances, kSeq], some labels ignored.
void Batch(int64_t s, std::vector<int32_t>& ids, std::vector<int32_t>& labels) {
  std::mt19937 rng(static_cast<uint32_t>(77 + s));
  ids.resize(kInstances * kSeq);
  labels.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = static_cast<int32_t>(rng() % 64);
    labels[i] = rng() % 7 == 0 ? kIgnoreLabel : static_cast<int32_t>(rng() % 64);
  }
}

struct Trajectory {
  std::vector<StepOutcome> steps;
  FlatBuffer params, m, v;
  int64_t adam_step = 0;
};

void Keep(FlatBuffer& dst, const FlatBuffer& src) {
  dst = FlatBuffer(src.size());
  std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
}

// One rank of `world` (world 1: no reducer): rows r, r+R, ... of every global batch.
void RunRank(Communicator* comm, int rank, int world, Trajectory& out) {
  const RunConfig rc = TinyRun();
  Olmo3Model model(rc.model, kMicro, kSeq);
  InitParams(model.layout(), model.params(), {.seed = 5, .std = 0.02});
  AdamW adam(model.layout(), rc.optim.AdamW());
  SkipStepRule skip(rc.train.skip_step);
  std::unique_ptr<DataParallel> dp;
  if (comm != nullptr) {
    dp = std::make_unique<DataParallel>(*comm, rc);
    dp->AdoptOptimizer(model.layout(), adam);
  }
  TrainStep step(model, adam, skip, kMicro, 1e-5, dp.get());
  const int64_t rows = kInstances / world;
  std::vector<int32_t> ids, labels, my_ids(rows * kSeq), my_labels(rows * kSeq);
  for (int64_t s = 1; s <= kSteps; ++s) {
    Batch(s, ids, labels);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t g = rank + world * i;
      std::memcpy(&my_ids[i * kSeq], &ids[g * kSeq], kSeq * sizeof(int32_t));
      std::memcpy(&my_labels[i * kSeq], &labels[g * kSeq], kSeq * sizeof(int32_t));
    }
    out.steps.push_back(step.Run(my_ids.data(), my_labels.data(), rows, kSeq, 1e-2));
  }
  if (dp) dp->GatherOptimizer(adam);
  if (rank == 0) {
    Keep(out.params, model.params());
    Keep(out.m, adam.m());
    Keep(out.v, adam.v());
    out.adam_step = adam.step();
  }
}

bool Same(const FlatBuffer& a, const FlatBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
bool Same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(DataParallel, TrainStepsBitIdenticalToOneProcess) {
  Trajectory want;
  RunRank(nullptr, 0, 1, want);
  for (int world : {2, 4, 8}) {
    std::vector<Trajectory> got(static_cast<size_t>(world));
    RunThreadGroup(world, [&](Communicator& comm) {
      RunRank(&comm, comm.rank(), world, got[static_cast<size_t>(comm.rank())]);
    });
    for (int r = 0; r < world; ++r) {
      const auto& steps = got[static_cast<size_t>(r)].steps;
      ASSERT_EQ(steps.size(), want.steps.size());
      for (size_t s = 0; s < steps.size(); ++s) {
        EXPECT_TRUE(Same(steps[s].loss, want.steps[s].loss)) << "world " << world << " step " << s;
        EXPECT_TRUE(Same(steps[s].grad_norm, want.steps[s].grad_norm)) << "world " << world;
        EXPECT_EQ(steps[s].label_tokens, want.steps[s].label_tokens);
        EXPECT_EQ(steps[s].skipped, want.steps[s].skipped);
      }
    }
    EXPECT_TRUE(Same(got[0].params, want.params)) << "params, world " << world;
    EXPECT_TRUE(Same(got[0].m, want.m)) << "Adam m, world " << world;
    EXPECT_TRUE(Same(got[0].v, want.v)) << "Adam v, world " << world;
    EXPECT_EQ(got[0].adam_step, want.adam_step);
  }
}

TEST(DataParallel, RefusesBatchesThatCannotBeShared) {
  RunConfig rc = TinyRun();
  rc.train.global_batch_instances = 6;  // 6 micro-batches: not a power of two
  EXPECT_THROW(RunThreadGroup(2, [&](Communicator& comm) { DataParallel dp(comm, rc); }), Error);
  rc.train.global_batch_instances = 2;  // 2 micro-batches for 4 ranks
  EXPECT_THROW(RunThreadGroup(4, [&](Communicator& comm) { DataParallel dp(comm, rc); }), Error);
}

}  // namespace
}  // namespace replica::parallel
