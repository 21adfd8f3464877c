// DataParallel (the trainer's data-parallel GradReducer, with its ZeRO-1 optimizer) under the
// trainer's own TrainStep: R = 1, 2, 4, 8 ranks as threads, each with its own model and its rows
// r::R of every batch, reproduce the single-process steps (LocalGradReducer + AdamW) bit for bit —
// losses, grad norms, parameters and (saved) Adam state — also across a save and load of the
// optimizer state between world sizes.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "parallel/data_parallel.h"
#include "parallel/thread_group.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "train/init.h"
#include "run/run_config.h"
#include "train/grad_reducer.h"
#include "train/train_step.h"
#include "testing/util.h"

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
  test::RandomLabelledBatch(static_cast<uint32_t>(77 + s), kInstances * kSeq, 64, ids, labels);
}

struct Trajectory {
  std::vector<StepOutcome> steps;
  FlatBuffer params, m, v;
  int64_t adam_step = 0;
};

FlatBuffer Copy(const FlatBuffer& src) {
  FlatBuffer dst(src.size());
  std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
  return dst;
}

// Steps first..last of one rank of `world` (comm null: one process, LocalGradReducer): rows
// r, r+R, ... of every global batch. Starts from `from`'s parameters and Adam state (as a
// checkpoint holds them) when given, else from a seeded init and zero state. Rank 0's `out` gets
// the parameters and the saved optimizer state at the end.
void RunRank(Communicator* comm, int world, const Trajectory* from, int64_t first, int64_t last,
             Trajectory& out) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  const RunConfig rc = TinyRun();
  Olmo3Model model(rc.model, kMicro, kSeq, CpuBackend());
  LocalGradReducer local;
  std::unique_ptr<DataParallel> dp;
  if (comm != nullptr) dp = std::make_unique<DataParallel>(*comm, rc);
  GradReducer& reducer = dp ? static_cast<GradReducer&>(*dp) : local;
  std::unique_ptr<Optimizer> optimizer =
      reducer.MakeOptimizer(model.layout(), MakeUpdateRule(model.layout(), rc.optim), CpuBackend());
  if (from != nullptr) {
    std::memcpy(model.params().data(), from->params.data(), from->params.size() * sizeof(float));
    optimizer->LoadState({Copy(from->m), Copy(from->v), from->adam_step});
  } else {
    InitParams(model.layout(), model.params(), {.seed = 5, .std = 0.02});
  }
  SkipStepRule skip(rc.train.skip_step);
  TrainStep step(model, reducer, *optimizer, skip, kMicro, 1e-5);
  const int64_t rows = kInstances / world;
  std::vector<int32_t> ids, labels, my_ids(rows * kSeq), my_labels(rows * kSeq);
  for (int64_t s = first; s <= last; ++s) {
    Batch(s, ids, labels);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t g = rank + world * i;
      std::memcpy(&my_ids[i * kSeq], &ids[g * kSeq], kSeq * sizeof(int32_t));
      std::memcpy(&my_labels[i * kSeq], &labels[g * kSeq], kSeq * sizeof(int32_t));
    }
    out.steps.push_back(step.Run(my_ids.data(), my_labels.data(), rows, kSeq, 1e-2));
  }
  const OptimizerState* state = optimizer->SaveState();  // collective
  EXPECT_EQ(state != nullptr, rank == 0);
  if (rank == 0) {
    out.params = Copy(model.params());
    out.m = Copy(state->m);
    out.v = Copy(state->v);
    out.adam_step = state->step;
  }
}

// RunRank on `world` thread ranks (world 0: one process without a communicator).
std::vector<Trajectory> RunWorld(int world, const Trajectory* from, int64_t first, int64_t last) {
  if (world == 0) {
    std::vector<Trajectory> got(1);
    RunRank(nullptr, 1, from, first, last, got[0]);
    return got;
  }
  std::vector<Trajectory> got(static_cast<size_t>(world));
  RunThreadGroup(world, [&](Communicator& comm) {
    RunRank(&comm, world, from, first, last, got[static_cast<size_t>(comm.rank())]);
  });
  return got;
}

bool Same(const FlatBuffer& a, const FlatBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
bool Same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void ExpectSameSteps(const std::vector<StepOutcome>& got, const std::vector<StepOutcome>& want,
                     int world) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    EXPECT_TRUE(Same(got[s].loss, want[s].loss)) << "world " << world << " step " << s;
    EXPECT_TRUE(Same(got[s].grad_norm, want[s].grad_norm)) << "world " << world;
    EXPECT_EQ(got[s].label_tokens, want[s].label_tokens);
    EXPECT_EQ(got[s].skipped, want[s].skipped);
  }
}

void ExpectSameState(const Trajectory& got, const Trajectory& want, const std::string& what) {
  EXPECT_TRUE(Same(got.params, want.params)) << "params, " << what;
  EXPECT_TRUE(Same(got.m, want.m)) << "Adam m, " << what;
  EXPECT_TRUE(Same(got.v, want.v)) << "Adam v, " << what;
  EXPECT_EQ(got.adam_step, want.adam_step) << what;
}

TEST(DataParallel, TrainStepsBitIdenticalToOneProcess) {
  const Trajectory want = std::move(RunWorld(0, nullptr, 1, kSteps).front());
  for (int world : {1, 2, 4, 8}) {
    const std::vector<Trajectory> got = RunWorld(world, nullptr, 1, kSteps);
    for (const Trajectory& rank : got) ExpectSameSteps(rank.steps, want.steps, world);
    ExpectSameState(got[0], want, "world " + std::to_string(world));
  }
}

// The optimizer state saved on 4 ranks (a checkpoint's m, v, t) continues on 2 ranks and in one
// process with the bits of an uninterrupted single-process run; saving the single process's state
// and loading it on 8 ranks does too.
TEST(DataParallel, OptimizerStateMovesBetweenWorldSizes) {
  const Trajectory want = std::move(RunWorld(0, nullptr, 1, kSteps).front());
  const Trajectory four = std::move(RunWorld(4, nullptr, 1, 2).front());
  const Trajectory one = std::move(RunWorld(0, nullptr, 1, 2).front());
  ExpectSameState(four, one, "saved after 2 steps on 4 ranks vs one process");
  for (int world : {0, 2}) {
    const std::vector<Trajectory> got = RunWorld(world, &four, 3, kSteps);
    ExpectSameSteps(got[0].steps,
                    std::vector<StepOutcome>(want.steps.begin() + 2, want.steps.end()), world);
    ExpectSameState(got[0], want, "4 ranks -> world " + std::to_string(world));
  }
  const std::vector<Trajectory> eight = RunWorld(8, &one, 3, kSteps);
  ExpectSameState(eight[0], want, "one process -> 8 ranks");
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
