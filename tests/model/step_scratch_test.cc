// What the plan counts for the backends' scratch is what they allocate: a real model trains one
// step on a fresh thread for each precision, and the buffers its backend and LM head workspace
// then hold (their own reported sizes) equal the backend's StepScratchBytes and the memory plan's
// figures exactly.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <vector>

#include "hf/hf_weights.h"
#include "model/model_sizes.h"
#include "model/olmo3.h"
#include "ops/cpu/bf16_weights.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/fsdp_bf16.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/registry.h"
#include "ops/rope_table.h"
#include "run/plan.h"

namespace replica {
namespace {

const std::string kData = REPLICA_TEST_DATA;

struct Held {
  uint64_t lm_head_workspace = 0, weight_copies = 0, operand_scratch = 0, op_scratch = 0;
};

// One training step (forward and backward, inside the Bf16WeightScope a trainer opens) of a model
// of `config` with micro-batches of B × T, on a thread of its own so the per-thread scratch starts
// empty; returns what was then held.
Held TrainOneStep(const std::string& dir, const ModelConfig& config, int64_t B, int64_t T,
                  Precision precision) {
  Held held;
  std::thread worker([&] {
    Olmo3Model model(config, B, T, SelectBackend("cpu", precision));
    LoadHfWeights(dir, model.layout(), model.params());
    std::mt19937 rng(7);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(config.vocab_size - 1));
    std::vector<int32_t> tokens(static_cast<size_t>(B * T)), labels(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = token(rng), labels[i] = token(rng);
    const uint64_t copies_before = Bf16WeightCopiesHeldBytes();
    {
      const Bf16WeightScope scope;
      model.ForwardBackward(tokens.data(), labels.data(), B, T, 1.0 / (B * T), 1e-4);
      model.ForwardBackward(tokens.data(), labels.data(), B, T, 1.0 / (B * T), 1e-4);
    }
    held.weight_copies = Bf16WeightCopiesHeldBytes() - copies_before;
    held.lm_head_workspace = model.lm_head_workspace_bytes();
    held.operand_scratch = GemmBf16ScratchHeld().bytes();
    held.op_scratch = FsdpScratchHeld().bytes();
  });
  worker.join();
  return held;
}

TEST(StepScratch, PlanCountsWhatEachPrecisionAllocates) {
  for (const char* name : {"tiny-mha", "tiny-gqa", "tiny-yarn"}) {
    const std::string dir = kData + "/olmo3/" + name;
    const ModelConfig config = ModelConfig::FromHfFile(dir + "/config.json");
    for (Precision precision : {Precision::kFp32, Precision::kBf16, Precision::kBf16Fsdp}) {
      for (auto [B, T] : {std::pair<int64_t, int64_t>{2, 16}, {1, 40}}) {
        SCOPED_TRACE(std::string(name) + " " + PrecisionName(precision) + " B=" +
                     std::to_string(B) + " T=" + std::to_string(T));
        const Held held = TrainOneStep(dir, config, B, T, precision);
        const StepScratch planned = TrainingStepScratch(config, B * T, "cpu", precision);
        EXPECT_EQ(planned.lm_head_workspace, held.lm_head_workspace);
        EXPECT_EQ(planned.weight_copies, held.weight_copies);
        EXPECT_EQ(planned.operand_scratch, held.operand_scratch);
        EXPECT_EQ(planned.op_scratch, held.op_scratch);
        EXPECT_GT(held.lm_head_workspace, 0u);
        // Each precision's buffers are really there (or really absent).
        EXPECT_EQ(held.operand_scratch > 0, precision == Precision::kBf16);
        EXPECT_EQ(held.op_scratch > 0, precision == Precision::kBf16Fsdp);
        EXPECT_EQ(held.weight_copies > 0, precision == Precision::kBf16 &&
                                              ActiveBf16GemmRoute() == Bf16GemmRoute::kOneDnn);

        // The memory plan's terms for the same run, one rank.
        RunConfig run;
        run.model = config;
        run.train.micro_batch_instances = B;
        run.train.global_batch_instances = B;
        run.data.seq_len = T;
        run.compute.precision = PrecisionName(precision);
        const Olmo3Model sized(config, B, T, SelectBackend("cpu", precision));
        for (Recompute r : {Recompute::kNone, Recompute::kFull}) {
          const MemoryPlan mem = PlanMemory(run, 1, r);
          EXPECT_EQ(mem.weight_copies, held.weight_copies);
          EXPECT_EQ(mem.gemm_scratch, held.operand_scratch + held.op_scratch);
          EXPECT_EQ(mem.activations,
                    4 * Olmo3Model::ActivationArenaFloats(config, B, T, r) +
                        held.lm_head_workspace + RopeTableBytes(config, T));
        }
        EXPECT_EQ(4 * Olmo3Model::ActivationArenaFloats(config, B, T, Recompute::kNone),
                  4 * sized.activation_arena_floats());
      }
    }
  }
}

// An LM head of several chunks: the workspace a backend's loss backward grows is
// LmHeadWorkspace::Bytes, and the bf16 GEMM's operand scratch is the largest chunk's.
TEST(StepScratch, ChunkedLmHeadWorkspace) {
  const int64_t N = 37, D = 24, V = 50, scratch = 9 * V;  // chunks of 9 rows, the last of 1
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(N * D), W(V * D), dx(N * D), dW(V * D);
  for (float& v : x) v = normal(rng);
  for (float& v : W) v = normal(rng);
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i) labels[i] = static_cast<int32_t>((i * 7) % V);
  for (Precision precision : {Precision::kFp32, Precision::kBf16, Precision::kBf16Fsdp}) {
    SCOPED_TRACE(PrecisionName(precision));
    uint64_t held = 0, forward_only = 0;
    std::thread worker([&] {
      const Backend& backend = SelectBackend("cpu", precision);
      LmHeadWorkspace ws(backend, N, V, scratch);
      backend.LmHeadLossForward(x.data(), W.data(), labels.data(), N, D, V, ws);
      forward_only = ws.allocated_bytes();
      backend.LmHeadLossForwardBackward(x.data(), W.data(), labels.data(), N, D, V, 1.0, 1e-4,
                                        ws, dx.data(), dW.data());
      held = ws.allocated_bytes();
    });
    worker.join();
    EXPECT_EQ(LmHeadWorkspace::ChunkRows(N, V, scratch), 9);
    EXPECT_EQ(forward_only, LmHeadWorkspace::Bytes(N, V, D, false, scratch));
    EXPECT_EQ(held, LmHeadWorkspace::Bytes(N, V, D, precision != Precision::kBf16Fsdp, scratch));
  }
}

TEST(StepScratch, RopeTableBytes) {
  for (int64_t hd : {8, 64}) {
    const RopeTable t = MakeRopeTable(33, hd, 10000.0);
    EXPECT_EQ(RopeTableBytesOf(33, hd), t.cos.bytes() + t.sin.bytes());
  }
}

}  // namespace
}  // namespace replica
