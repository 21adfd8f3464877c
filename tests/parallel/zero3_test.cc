// ZeRO-3 (parallel/zero3.h) under the trainer's own TrainStep: R = 1, 2, 3, 4, 6, 12 ranks as threads,
// each holding only its owned range of parameters, gradients and Adam state and its rows r::R of
// every batch, reproduce the single-process sequential accumulation (LocalGradReducer("sequential")
// + AdamW) bit for bit — losses, grad norms, token counts, parameters, Adam m and v, and an
// evaluation forward run on every rank — untied and tied embeddings, fp32 and bf16 matmuls, also
// across a save and load of the state between world sizes. Refusals name the config keys.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "ops/cpu/cpu_bf16_backend.h"
#include "parallel/data_parallel.h"
#include "parallel/thread_group.h"
#include "parallel/zero3.h"
#include "run/run_config.h"
#include "train/grad_reducer.h"
#include "train/init.h"
#include "train/train_step.h"
#include "testing/util.h"

namespace replica::parallel {
namespace {

constexpr int64_t kInstances = 12, kMicro = 1, kSeq = 16, kSteps = 3;

RunConfig TinyRun(bool tied) {
  RunConfig c;
  c.model = ModelConfig::FromHfJson({{"model_type", "olmo3"},
                                     {"vocab_size", 64},
                                     {"hidden_size", 32},
                                     {"intermediate_size", 64},
                                     {"num_hidden_layers", 2},
                                     {"num_attention_heads", 4},
                                     {"num_key_value_heads", 2},
                                     {"rms_norm_eps", 1e-6},
                                     {"rope_theta", 10000.0},
                                     {"sliding_window", 4},
                                     {"tie_word_embeddings", tied},
                                     {"max_position_embeddings", 64}},
                                    "tiny test model");
  c.train.global_batch_instances = kInstances;
  c.train.micro_batch_instances = kMicro;
  c.train.grad_accumulation = "sequential";
  c.parallel.sharding = "zero3";
  c.data.seq_len = kSeq;
  return c;
}

// Global batch of step s: ids and labels [kInstances, kSeq], some labels ignored.
void Batch(int64_t s, std::vector<int32_t>& ids, std::vector<int32_t>& labels) {
  test::RandomLabelledBatch(static_cast<uint32_t>(91 + s), kInstances * kSeq, 64, ids, labels);
}

struct Trajectory {
  std::vector<StepOutcome> steps;
  FlatBuffer params, m, v;
  int64_t adam_step = 0;
  double eval_ce = 0;  // ForwardLoss on batch 0 after the last step
};

FlatBuffer Copy(const FlatBuffer& src) {
  FlatBuffer dst(src.size());
  std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
  return dst;
}

// Steps first..last of one rank (comm null: one process, sequential LocalGradReducer). Starts
// from `from` (a checkpoint's whole parameters and Adam state) when given, else from the seeded
// init of the owned range. Rank 0's `out` gets the whole parameters and state at the end.
void RunRank(Communicator* comm, bool tied, const Trajectory* from, int64_t first, int64_t last,
             Trajectory& out, const Backend& backend = CpuBackend()) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int world = comm != nullptr ? comm->world() : 1;
  const RunConfig rc = TinyRun(tied);
  LocalGradReducer local("sequential");
  std::unique_ptr<Zero3> zero3;
  if (comm != nullptr) zero3 = std::make_unique<Zero3>(*comm, rc);
  GradReducer& reducer = zero3 ? static_cast<GradReducer&>(*zero3) : local;
  Olmo3Model model(rc.model, kMicro, kSeq, backend, reducer.MakeParamStore(rc.model, backend));
  std::unique_ptr<Optimizer> optimizer = reducer.MakeOptimizer(model.layout(), rc.optim, backend);
  const OwnedParams owned = reducer.Owned(model);
  if (from != nullptr) {
    std::memcpy(owned.buffer->data(), from->params.data() + owned.begin,
                (owned.end - owned.begin) * sizeof(float));
    optimizer->LoadState({Copy(from->m), Copy(from->v), from->adam_step});
  } else {
    InitParamsRange(model.layout(), owned.buffer->data(), owned.begin, owned.end,
                    {.seed = 5, .std = 0.02});
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
  Batch(0, ids, labels);  // every rank runs the (collective) evaluation forward
  out.eval_ce = model.ForwardLoss(ids.data(), labels.data(), kMicro, kSeq).ce_sum;
  const FlatBuffer* whole = reducer.WholeParams(model);  // collective
  const OptimizerState* state = optimizer->SaveState();  // collective
  EXPECT_EQ(state != nullptr, rank == 0);
  EXPECT_EQ(whole != nullptr, rank == 0);
  if (rank == 0) {
    out.params = Copy(*whole);
    out.m = Copy(state->m);
    out.v = Copy(state->v);
    out.adam_step = state->step;
  }
}

// world 0: one process without a communicator.
std::vector<Trajectory> RunWorld(int world, bool tied, const Trajectory* from, int64_t first,
                                 int64_t last, const Backend& backend = CpuBackend()) {
  if (world == 0) {
    std::vector<Trajectory> got(1);
    RunRank(nullptr, tied, from, first, last, got[0], backend);
    return got;
  }
  std::vector<Trajectory> got(static_cast<size_t>(world));
  RunThreadGroup(world, [&](Communicator& comm) {
    RunRank(&comm, tied, from, first, last, got[static_cast<size_t>(comm.rank())], backend);
  });
  return got;
}

bool Same(const FlatBuffer& a, const FlatBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
bool Same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void ExpectSameSteps(const std::vector<StepOutcome>& got, const std::vector<StepOutcome>& want,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    EXPECT_TRUE(Same(got[s].loss, want[s].loss)) << what << " step " << s;
    EXPECT_TRUE(Same(got[s].ce_loss, want[s].ce_loss)) << what << " step " << s;
    EXPECT_TRUE(Same(got[s].z_loss, want[s].z_loss)) << what << " step " << s;
    EXPECT_TRUE(Same(got[s].grad_norm, want[s].grad_norm)) << what << " step " << s;
    EXPECT_EQ(got[s].label_tokens, want[s].label_tokens) << what;
    EXPECT_EQ(got[s].skipped, want[s].skipped) << what;
  }
}

void ExpectSameState(const Trajectory& got, const Trajectory& want, const std::string& what) {
  EXPECT_TRUE(Same(got.params, want.params)) << "params, " << what;
  EXPECT_TRUE(Same(got.m, want.m)) << "Adam m, " << what;
  EXPECT_TRUE(Same(got.v, want.v)) << "Adam v, " << what;
  EXPECT_EQ(got.adam_step, want.adam_step) << what;
}

TEST(Zero3, TrainStepsBitIdenticalToSequentialOneProcess) {
  for (bool tied : {false, true}) {
    const Trajectory want = std::move(RunWorld(0, tied, nullptr, 1, kSteps).front());
    EXPECT_GT(want.adam_step, 0);
    for (int world : {1, 2, 3, 4, 6, 12}) {  // 12: more ranks than blocks, some own nothing
      const std::string what = "world " + std::to_string(world) + (tied ? " tied" : " untied");
      const std::vector<Trajectory> got = RunWorld(world, tied, nullptr, 1, kSteps);
      for (const Trajectory& rank : got) {
        ExpectSameSteps(rank.steps, want.steps, what);
        EXPECT_TRUE(Same(rank.eval_ce, want.eval_ce)) << "eval forward, " << what;
      }
      ExpectSameState(got[0], want, what);
    }
  }
}

// compute.precision bf16 (bf16 matmul operands, fp32 weights gathered): the same property.
TEST(Zero3, Bf16BitIdenticalToSequentialOneProcess) {
  const Backend& bf16 = BackendFor(Precision::kBf16);
  const Trajectory want = std::move(RunWorld(0, false, nullptr, 1, 2, bf16).front());
  for (int world : {1, 3, 4}) {
    const std::string what = "bf16 world " + std::to_string(world);
    const std::vector<Trajectory> got = RunWorld(world, false, nullptr, 1, 2, bf16);
    for (const Trajectory& rank : got) ExpectSameSteps(rank.steps, want.steps, what);
    ExpectSameState(got[0], want, what);
  }
  const Trajectory fp32 = std::move(RunWorld(0, false, nullptr, 1, 2).front());
  EXPECT_FALSE(Same(fp32.params, want.params)) << "bf16 ran as fp32";
}

// The sequential fold is a different sum from the tree: the two trajectories differ (else the
// test above could not tell them apart).
TEST(Zero3, SequentialAccumulationDiffersFromTheTree) {
  const Trajectory seq = std::move(RunWorld(0, false, nullptr, 1, 1).front());
  const RunConfig rc = TinyRun(false);
  LocalGradReducer tree("tree");
  Olmo3Model model(rc.model, kMicro, kSeq);
  InitParams(model.layout(), model.params(), {.seed = 5, .std = 0.02});
  std::unique_ptr<Optimizer> adam = tree.MakeOptimizer(model.layout(), rc.optim);
  SkipStepRule skip(rc.train.skip_step);
  TrainStep step(model, tree, *adam, skip, kMicro, 1e-5);
  std::vector<int32_t> ids, labels;
  Batch(1, ids, labels);
  const StepOutcome o = step.Run(ids.data(), labels.data(), kInstances, kSeq, 1e-2);
  EXPECT_NEAR(o.loss, seq.steps[0].loss, 1e-9);
  EXPECT_FALSE(Same(o.grad_norm, seq.steps[0].grad_norm) && Same(o.loss, seq.steps[0].loss));
}

// The state saved on 4 ranks after 2 steps continues on 3 ranks and in one process with the bits
// of the uninterrupted run; the one process's state continues on 6 ranks.
TEST(Zero3, StateMovesBetweenWorldSizes) {
  const Trajectory want = std::move(RunWorld(0, false, nullptr, 1, kSteps).front());
  const Trajectory four = std::move(RunWorld(4, false, nullptr, 1, 2).front());
  const Trajectory one = std::move(RunWorld(0, false, nullptr, 1, 2).front());
  ExpectSameState(four, one, "saved after 2 steps on 4 ranks vs one process");
  const std::vector<StepOutcome> tail(want.steps.begin() + 2, want.steps.end());
  for (int world : {0, 3}) {
    const std::vector<Trajectory> got = RunWorld(world, false, &four, 3, kSteps);
    ExpectSameSteps(got[0].steps, tail, "4 ranks -> world " + std::to_string(world));
    ExpectSameState(got[0], want, "4 ranks -> world " + std::to_string(world));
  }
  const std::vector<Trajectory> six = RunWorld(6, false, &one, 3, kSteps);
  ExpectSameState(six[0], want, "one process -> 6 ranks");
}

TEST(Zero3, RefusalsNameTheKeys) {
  RunConfig rc = TinyRun(false);
  rc.train.grad_accumulation = "tree";
  try {
    RunThreadGroup(2, [&](Communicator& comm) { Zero3 z(comm, rc); });
    ADD_FAILURE() << "zero3 with the tree accumulation was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.grad_accumulation"), std::string::npos) << e.what();
  }
  rc = TinyRun(false);
  try {
    RunThreadGroup(5, [&](Communicator& comm) { Zero3 z(comm, rc); });  // 12 micro-batches
    ADD_FAILURE() << "5 ranks for 12 micro-batches were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide the 12 micro-batches"), std::string::npos)
        << e.what();
  }
  rc.parallel.sharding = "zero1";
  rc.train.global_batch_instances = 8;
  try {
    RunThreadGroup(2, [&](Communicator& comm) { DataParallel dp(comm, rc); });
    ADD_FAILURE() << "zero1 with the sequential accumulation on 2 ranks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.grad_accumulation"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("parallel.sharding"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replica::parallel
