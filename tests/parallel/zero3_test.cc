// ZeRO-3 (parallel/zero3.h) under the trainer's own TrainStep: R = 1, 2, 3, 4, 6, 12 ranks as threads,
// each holding only its owned range of parameters, gradients and Adam state and its rows r::R of
// every batch, reproduce the single-process sequential accumulation (LocalGradReducer("sequential")
// + AdamW) bit for bit — losses, grad norms, token counts, parameters, Adam m and v, and an
// evaluation forward run on every rank — untied and tied embeddings, fp32 and bf16 matmuls, with
// and without the gather prefetch, bf16 or fp32 gathers, activation recomputation, also across a
// save and load of the state between world sizes. The store alone gathers the right values under
// any acquire order (mispredicted prefetches, drains between changes of the master copy), and its
// bf16 gathers send the wire bytes the rule says (half for the matmul weights). Refusals name the
// config keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "model/recompute.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/cpu_bf16_backend.h"
#include "ops/registry.h"
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

// How a zero3 run is set up beyond the world size: the store's options (default: what Zero3
// chooses — prefetch on, bf16 gathers over the bf16 backend) and the recompute policy.
struct Variant {
  std::optional<Zero3StoreOptions> store;
  Recompute recompute = Recompute::kNone;
};

// Steps first..last of one rank (comm null: one process, sequential LocalGradReducer). Starts
// from `from` (a checkpoint's whole parameters and Adam state) when given, else from the seeded
// init of the owned range. Rank 0's `out` gets the whole parameters and state at the end.
void RunRank(Communicator* comm, bool tied, const Trajectory* from, int64_t first, int64_t last,
             Trajectory& out, const Backend& backend = CpuBackend(), const Variant& variant = {}) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  const int world = comm != nullptr ? comm->world() : 1;
  const RunConfig rc = TinyRun(tied);
  LocalGradReducer local("sequential");
  std::unique_ptr<Zero3> zero3;
  if (comm != nullptr) zero3 = std::make_unique<Zero3>(*comm, rc);
  if (zero3 && variant.store) zero3->OverrideStoreOptions(*variant.store);
  GradReducer& reducer = zero3 ? static_cast<GradReducer&>(*zero3) : local;
  Olmo3Model model(rc.model, kMicro, kSeq, backend, reducer.MakeParamStore(rc.model, backend),
                   variant.recompute);
  std::unique_ptr<Optimizer> optimizer =
      reducer.MakeOptimizer(model.layout(), MakeUpdateRule(model.layout(), rc.optim), backend);
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
                                 int64_t last, const Backend& backend = CpuBackend(),
                                 const Variant& variant = {}) {
  if (world == 0) {
    std::vector<Trajectory> got(1);
    RunRank(nullptr, tied, from, first, last, got[0], backend, variant);
    return got;
  }
  std::vector<Trajectory> got(static_cast<size_t>(world));
  RunThreadGroup(world, [&](Communicator& comm) {
    RunRank(&comm, tied, from, first, last, got[static_cast<size_t>(comm.rank())], backend,
            variant);
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

// Prefetch off, and full recomputation with the prefetch on (the recompute forward uses the
// weights the backward acquired): the same bits.
TEST(Zero3, PrefetchOffAndRecomputeBitIdenticalToSequentialOneProcess) {
  for (bool tied : {false, true}) {
    const Trajectory want = std::move(RunWorld(0, tied, nullptr, 1, kSteps).front());
    const Variant off{.store = Zero3StoreOptions{.prefetch = false}};
    const Variant full{.store = std::nullopt, .recompute = Recompute::kFull};
    for (int world : {1, 2, 3, 4}) {
      for (const auto& [variant, name] : {std::pair{off, "prefetch off"}, std::pair{full, "recompute full"}}) {
        const std::string what = std::string(name) + " world " + std::to_string(world) +
                                 (tied ? " tied" : " untied");
        const std::vector<Trajectory> got =
            RunWorld(world, tied, nullptr, 1, kSteps, CpuBackend(), variant);
        for (const Trajectory& rank : got) {
          ExpectSameSteps(rank.steps, want.steps, what);
          EXPECT_TRUE(Same(rank.eval_ce, want.eval_ce)) << "eval forward, " << what;
        }
        ExpectSameState(got[0], want, what);
      }
    }
  }
}

// compute.precision bf16 (bf16 matmul operands; the matmul weights gathered as bf16, prefetched):
// the same property, and the same bits as fp32 gathers without prefetch, tied and untied, with
// full recomputation, and with ranks that own nothing (12).
TEST(Zero3, Bf16BitIdenticalToSequentialOneProcess) {
  const Backend& bf16 = SelectBackend("cpu", Precision::kBf16);
  const Variant fp32_gathers{.store = Zero3StoreOptions{.prefetch = false, .bf16_matmul_weights = false}};
  const Variant full{.store = std::nullopt, .recompute = Recompute::kFull};
  for (bool tied : {false, true}) {
    const Trajectory want = std::move(RunWorld(0, tied, nullptr, 1, 2, bf16).front());
    for (int world : {1, 2, 3, 4, 12}) {
      for (const auto& [variant, name] : {std::pair{Variant{}, "bf16 gathers"},
                                          std::pair{fp32_gathers, "fp32 gathers, no prefetch"},
                                          std::pair{full, "bf16 gathers, recompute full"}}) {
        if (world == 12 && variant.recompute == Recompute::kFull) continue;
        const std::string what = std::string("bf16 ") + name + " world " + std::to_string(world) +
                                 (tied ? " tied" : " untied");
        const std::vector<Trajectory> got = RunWorld(world, tied, nullptr, 1, 2, bf16, variant);
        for (const Trajectory& rank : got) {
          ExpectSameSteps(rank.steps, want.steps, what);
          EXPECT_TRUE(Same(rank.eval_ce, want.eval_ce)) << "eval forward, " << what;
        }
        ExpectSameState(got[0], want, what);
      }
    }
    const Trajectory fp32 = std::move(RunWorld(0, tied, nullptr, 1, 2).front());
    EXPECT_FALSE(Same(fp32.params, want.params)) << "bf16 ran as fp32";
  }
}

// ---- The store alone -------------------------------------------------------------------------

// Counts the bytes this rank starts sending on each stream (tag 0: the blocking calls).
class RecordingCommunicator final : public Communicator {
 public:
  explicit RecordingCommunicator(Communicator& inner) : c_(inner) {}
  int rank() const override { return c_.rank(); }
  int world() const override { return c_.world(); }
  void Send(const void* data, size_t bytes, int dest) override {
    sent[0] += bytes;
    c_.Send(data, bytes, dest);
  }
  void Recv(void* data, size_t bytes, int src) override { c_.Recv(data, bytes, src); }
  void SendRecv(const void* send, size_t send_bytes, void* recv, size_t recv_bytes,
                int partner) override {
    sent[0] += send_bytes;
    c_.SendRecv(send, send_bytes, recv, recv_bytes, partner);
  }
  Request Isend(const void* data, size_t bytes, int dest, int tag) override {
    sent[static_cast<size_t>(tag)] += bytes;
    return c_.Isend(data, bytes, dest, tag);
  }
  Request Irecv(void* data, size_t bytes, int src, int tag) override {
    return c_.Irecv(data, bytes, src, tag);
  }
  void Wait(Request& request) override { c_.Wait(request); }
  void Barrier() override { c_.Barrier(); }
  [[noreturn]] void Abort(int code) override {
    c_.Abort(code);
    std::abort();  // not reached
  }
  const char* kind() const override { return c_.kind(); }
  size_t sent[4] = {0, 0, 0, 0};

 private:
  Communicator& c_;
};

bool MatmulWeight(const std::string& name) {
  return name.ends_with("_proj.weight") || name == "lm_head.weight";
}

// The whole parameters a test store holds: values whose low 16 bits are not zero, so that a bf16
// rounding shows. `version` changes every value.
FlatBuffer TestParams(const ParamLayout& layout, int version) {
  FlatBuffer p(layout.total_floats());
  std::mt19937 rng(static_cast<uint32_t>(17 + version));
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (size_t i = 0; i < p.size(); ++i) p.data()[i] = d(rng) + 1e-3f * static_cast<float>(version);
  // The rounding's edge cases: ties to even both ways, a subnormal, the largest float (rounds to
  // Inf), ±Inf and NaNs (quiet, signalling).
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x00012345u, 0x7f7fffffu,
                              0x7f800000u, 0xff800000u, 0x7fc01234u, 0x7f801234u};
  for (size_t i = 0, k = 0; i < p.size(); i += 997, ++k)
    std::memcpy(p.data() + i, &special[k % 8], sizeof(float));
  return p;
}

// Acquire(u)'s values against the whole parameters: fp32 everywhere but the bf16-gathered tensors'
// floats that other ranks sent, which are their bf16 roundings.
void ExpectGathered(const Zero3ParamStore& store, const ParamLayout& layout,
                    const std::vector<size_t>& bounds, const FlatBuffer& want, int unit,
                    const float* got, const std::string& what) {
  const size_t lo = bounds[static_cast<size_t>(unit)], hi = bounds[static_cast<size_t>(unit) + 1];
  size_t wrong = 0;
  for (const ParamView& v : layout.views()) {
    if (v.offset < lo || v.offset >= hi) continue;
    const bool bf16 = store.options().bf16_matmul_weights && MatmulWeight(v.name);
    for (size_t e = v.offset; e < v.offset + v.numel; ++e) {
      const bool mine = e >= store.owned_begin() && e < store.owned_end();
      const float w = bf16 && !mine ? RoundToBf16(want.data()[e]) : want.data()[e];
      if (std::memcmp(&w, got + (e - lo), sizeof w) != 0) ++wrong;
    }
  }
  EXPECT_EQ(wrong, 0u) << what << ", unit " << unit;
}

// Any acquire order — the model's, then random ones that mispredict, two units open at a time —
// gathers the current values on every world size, including ranks that own nothing; a Drain before
// the master copy changes makes the next gathers see the change.
TEST(Zero3Store, GathersTheValuesUnderAnyAcquireOrder) {
  for (bool tied : {false, true}) {
    const RunConfig rc = TinyRun(tied);
    const ParamLayout layout = rc.model.BuildLayout();
    const int64_t L = rc.model.num_layers;
    const std::vector<size_t> bounds = UnitBounds(layout, L);
    const int units = static_cast<int>(bounds.size()) - 1;
    for (bool bf16 : {false, true}) {
      for (int world : {1, 2, 3, 4, 12}) {
        const std::string what = std::string(tied ? "tied" : "untied") + (bf16 ? " bf16" : " fp32") +
                                 " world " + std::to_string(world);
        RunThreadGroup(world, [&](Communicator& comm) {
          Zero3ParamStore store(layout, L, comm, CpuBackend(),
                                {.prefetch = true, .bf16_matmul_weights = bf16});
          int version = 0;
          FlatBuffer want = TestParams(layout, version);
          auto load = [&] {
            std::memcpy(store.master().data(), want.data() + store.owned_begin(),
                        (store.owned_end() - store.owned_begin()) * sizeof(float));
          };
          load();
          auto acquire = [&](int u) {
            ExpectGathered(store, layout, bounds, want, u, store.Acquire(u),
                           what + " rank " + std::to_string(comm.rank()));
          };
          // The model's order (forward, tied head, backward), three micro-batches: from the third
          // on every acquire finds its unit prefetched.
          int64_t hits_before = 0, acquires_before = 0;
          for (int pass = 0; pass < 3; ++pass) {
            if (pass == 2) {
              hits_before = store.prefetch_hits();
              acquires_before = store.acquires();
            }
            for (int u = 0; u < units; ++u) {
              acquire(u);
              if (u + 1 < units) store.Release(u);
            }
            if (tied) {
              acquire(0);
              store.Release(0);
            }
            store.Release(units - 1);
            for (int u = units - 2; u >= 1; --u) {
              acquire(u);
              store.Release(u);
            }
          }
          if (world > 1) {
            EXPECT_EQ(store.prefetch_hits() - hits_before, store.acquires() - acquires_before)
                << what;
          }
          // Random orders, the same on every rank; the master copy changes between drains.
          std::mt19937 rng(23);
          std::vector<int> open;
          for (int op = 0; op < 300; ++op) {
            if (op % 75 == 74) {
              for (int u : open) store.Release(u);
              open.clear();
              store.Drain();
              want = TestParams(layout, ++version);
              load();
              continue;
            }
            const int u = static_cast<int>(rng() % static_cast<uint32_t>(units));
            if (auto it = std::find(open.begin(), open.end(), u); it != open.end()) {
              store.Release(u);
              open.erase(it);
            } else if (open.size() < 2) {
              acquire(u);
              open.push_back(u);
            }
          }
          for (int u : open) store.Release(u);
        });
      }
    }
  }
}

// A unit costs (R - 1) times its wire image on the gather stream: 4 bytes a float in fp32, 2 for
// the floats of the matmul weights with bf16 gathers — about half for a layer and the untied LM
// head — while the embedding (and so the tied head) stays fp32. The folds are untouched.
TEST(Zero3Store, Bf16GathersSendHalfTheMatmulWeightBytes) {
  for (bool tied : {false, true}) {
    const RunConfig rc = TinyRun(tied);
    const ParamLayout layout = rc.model.BuildLayout();
    const int64_t L = rc.model.num_layers;
    const std::vector<size_t> bounds = UnitBounds(layout, L);
    const int units = static_cast<int>(bounds.size()) - 1;
    constexpr int kWorld = 3;
    for (int u = 0; u < units; ++u) {
      size_t sent[2] = {0, 0};  // fp32, bf16 gathers: bytes over all ranks
      for (int bf16 = 0; bf16 < 2; ++bf16) {
        std::mutex mu;
        RunThreadGroup(kWorld, [&](Communicator& inner) {
          RecordingCommunicator comm(inner);
          Zero3ParamStore store(layout, L, comm, CpuBackend(),
                                {.prefetch = false, .bf16_matmul_weights = bf16 == 1});
          (void)store.Acquire(u);
          store.Release(u);
          EXPECT_EQ(comm.sent[0], 0u);
          std::lock_guard<std::mutex> lock(mu);
          sent[bf16] += comm.sent[Zero3ParamStore::kGatherTag];
        });
      }
      // The rule, from the layout: each tensor (with the padding after it) at 2 or 4 bytes a float.
      size_t want[2] = {0, 0};
      const std::vector<ParamView>& views = layout.views();
      for (size_t i = 0; i < views.size(); ++i) {
        if (views[i].offset < bounds[static_cast<size_t>(u)] ||
            views[i].offset >= bounds[static_cast<size_t>(u) + 1])
          continue;
        const size_t end = i + 1 < views.size() ? views[i + 1].offset : layout.total_floats();
        want[0] += 4 * (end - views[i].offset);
        want[1] += (MatmulWeight(views[i].name) ? 2 : 4) * (end - views[i].offset);
      }
      const std::string what = std::string(tied ? "tied" : "untied") + " unit " + std::to_string(u);
      EXPECT_EQ(sent[0], (kWorld - 1) * want[0]) << what;
      EXPECT_EQ(sent[1], (kWorld - 1) * want[1]) << what;
      if (u == 0 || (tied && u == units - 1)) {
        EXPECT_EQ(sent[1], sent[0]) << what << ": the embedding and final norm stay fp32";
      } else {
        EXPECT_LT(static_cast<double>(sent[1]), 0.51 * static_cast<double>(sent[0])) << what;
      }
    }
  }
}

// The sequential fold is a different sum from the tree: the two trajectories differ (else the
// test above could not tell them apart).
TEST(Zero3, SequentialAccumulationDiffersFromTheTree) {
  const Trajectory seq = std::move(RunWorld(0, false, nullptr, 1, 1).front());
  const RunConfig rc = TinyRun(false);
  LocalGradReducer tree("tree");
  Olmo3Model model(rc.model, kMicro, kSeq, CpuBackend());
  InitParams(model.layout(), model.params(), {.seed = 5, .std = 0.02});
  std::unique_ptr<Optimizer> adam =
      tree.MakeOptimizer(model.layout(), MakeUpdateRule(model.layout(), rc.optim), CpuBackend());
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
