// The backend seam (ops/backend.h, docs/design.md §8): the model, the training step, the optimizers
// (local and ZeRO-1), the collectives and the checkpoint snapshot compute only through the Backend
// they were built over. A backend that records every call and forwards it to the fp32 CPU backend
// must give exactly the bits of the plain CPU backend (nothing computes beside the table), and every
// op of the table must be called (each is really on the path a second backend would replace).
#include "ops/backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>


#include "ops/cpu/cpu_backend.h"
#include "checkpoint/sharded_writer.h"
#include "checkpoint/writer.h"
#include "core/atomic_file.h"
#include "core/threads.h"
#include "hf/hf_weights.h"
#include "infer/decoder.h"
#include "infer/inference_model.h"
#include "infer/model_weights.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"
#include "parallel/thread_group.h"
#include "parallel/collectives.h"
#include "parallel/sharded_optimizer.h"
#include "testing/util.h"
#include "train/grad_accum.h"
#include "train/grad_reducer.h"
#include "train/train_step.h"

namespace replica {
namespace {

// Forwards every op to `inner` and counts the calls by op name (thread-safe: ranks are threads).
// With `host` false it reports is_host() false, as a device backend would, so its callers fill
// and read its buffers through CopyFromHost / CopyToHost (the memory is still the inner one's).
class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(const Backend& inner, bool host = true) : inner_(inner), host_(host) {}
  const char* name() const override { return "recording"; }
  Precision matmul_precision() const override { return inner_.matmul_precision(); }
  bool is_host() const override { return host_ && inner_.is_host(); }
  const Device& device() const override { return inner_.device(); }
  Buffer Allocate(DType dtype, size_t elements) const override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      allocated_bytes_ += static_cast<int64_t>(elements * DTypeSize(dtype));
    }
    Note("Allocate");
    return inner_.Allocate(dtype, elements);
  }
  void CopyFromHost(void* dst, const void* src, size_t bytes) const override {
    Note("CopyFromHost");
    inner_.CopyFromHost(dst, src, bytes);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) const override {
    Note("CopyToHost");
    inner_.CopyToHost(dst, src, bytes);
  }
  StepScratch StepScratchBytes(const StepShape& s) const override {
    return inner_.StepScratchBytes(s);
  }
  std::unique_ptr<StepBracket> BeginStep() const override {
    Note("BeginStep");
    return inner_.BeginStep();
  }
  void NoteWeightsWritten(const void* begin, size_t bytes) const override {
    Note("NoteWeightsWritten");
    inner_.NoteWeightsWritten(begin, bytes);
  }
  void FillRopeTable(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                     float* cos, float* sin) const override {
    Note("FillRopeTable");
    inner_.FillRopeTable(params, max_positions, head_dim, cos, sin);
  }
  int64_t AllocatedBytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return allocated_bytes_;
  }

  std::map<std::string, int64_t> Calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  void LinearForward(const float* x, const float* W, int64_t N, int64_t in, int64_t out,
                     float* y) const override {
    Note("LinearForward");
    inner_.LinearForward(x, W, N, in, out, y);
  }
  void LinearBackward(const float* x, const float* W, const float* dy, int64_t N, int64_t in,
                      int64_t out, float* dx, float* dW) const override {
    Note("LinearBackward");
    inner_.LinearBackward(x, W, dy, N, in, out, dx, dW);
  }
  void RMSNormForward(const float* x, const float* w, int64_t rows, int64_t n, double eps,
                      float* y, float* rstd) const override {
    Note("RMSNormForward");
    inner_.RMSNormForward(x, w, rows, n, eps, y, rstd);
  }
  void RMSNormAddForward(const float* x, const float* w, const float* residual, int64_t rows,
                         int64_t n, double eps, float* y, float* rstd) const override {
    Note("RMSNormAddForward");
    inner_.RMSNormAddForward(x, w, residual, rows, n, eps, y, rstd);
  }
  void RMSNormBackward(const float* x, const float* w, const float* rstd, const float* dy,
                       int64_t rows, int64_t n, float* dx, float* dw) const override {
    Note("RMSNormBackward");
    inner_.RMSNormBackward(x, w, rstd, dy, rows, n, dx, dw);
  }
  void RopeForward(const RopeTable& table, const float* x, int64_t B, int64_t T, int64_t heads,
                   const int32_t* positions,
                   float* y) const override {
    Note("RopeForward");
    inner_.RopeForward(table, x, B, T, heads, positions, y);
  }
  void RopeBackward(const RopeTable& table, const float* dy, int64_t B, int64_t T, int64_t heads,
                    const int32_t* positions,
                    float* dx) const override {
    Note("RopeBackward");
    inner_.RopeBackward(table, dy, B, T, heads, positions, dx);
  }
  void AttentionForward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        float* out, float* lse) const override {
    Note("AttentionForward");
    inner_.AttentionForward(s, q, k, v, out, lse);
  }
  void AttentionBackward(const AttentionShape& s, const float* q, const float* k, const float* v,
                         const float* out, const float* lse, const float* dout, float* dq,
                         float* dk, float* dv) const override {
    Note("AttentionBackward");
    inner_.AttentionBackward(s, q, k, v, out, lse, dout, dq, dk, dv);
  }
  void EmbeddingForwardStored(const StoredMatrix& table, const int32_t* tokens, int64_t N,
                              float* out) const override {
    Note("EmbeddingForwardStored");
    inner_.EmbeddingForwardStored(table, tokens, N, out);
  }
  void MatVec(const StoredMatrix& W, const float* x, float* y) const override {
    Note("MatVec");
    inner_.MatVec(W, x, y);
  }
  void AttentionDecode(const DecodeAttentionShape& s, const float* q, const float* k_cache,
                       const float* v_cache, float* out, float* scores) const override {
    Note("AttentionDecode");
    inner_.AttentionDecode(s, q, k_cache, v_cache, out, scores);
  }
  void SwiGLUForward(const float* g, const float* u, int64_t n, float* s) const override {
    Note("SwiGLUForward");
    inner_.SwiGLUForward(g, u, n, s);
  }
  void SwiGLUBackward(const float* g, const float* u, const float* ds, int64_t n, float* dg,
                      float* du) const override {
    Note("SwiGLUBackward");
    inner_.SwiGLUBackward(g, u, ds, n, dg, du);
  }
  void EmbeddingForward(const float* table, const int32_t* tokens, int64_t N, int64_t D,
                        float* out) const override {
    Note("EmbeddingForward");
    inner_.EmbeddingForward(table, tokens, N, D, out);
  }
  void EmbeddingBackward(const int32_t* tokens, const float* dout, int64_t N, int64_t V, int64_t D,
                         float* dtable) const override {
    Note("EmbeddingBackward");
    inner_.EmbeddingBackward(tokens, dout, N, V, D, dtable);
  }
  CrossEntropySums LmHeadLossForward(const float* x, const float* W, const int32_t* labels,
                                     int64_t N, int64_t D, int64_t V,
                                     LmHeadWorkspace& ws) const override {
    Note("LmHeadLossForward");
    return inner_.LmHeadLossForward(x, W, labels, N, D, V, ws);
  }
  CrossEntropySums LmHeadLossForwardBackward(const float* x, const float* W,
                                             const int32_t* labels, int64_t N, int64_t D,
                                             int64_t V, double grad_scale, double z_mul,
                                             LmHeadWorkspace& ws, float* dx,
                                             float* dW) const override {
    Note("LmHeadLossForwardBackward");
    return inner_.LmHeadLossForwardBackward(x, W, labels, N, D, V, grad_scale, z_mul, ws, dx, dW);
  }
  void LmHeadLogits(const float* x, const float* W, int64_t N, int64_t D, int64_t V,
                    float* logits) const override {
    Note("LmHeadLogits");
    inner_.LmHeadLogits(x, W, N, D, V, logits);
  }
  void Zero(float* x, int64_t n) const override {
    Note("Zero");
    inner_.Zero(x, n);
  }
  void Copy(float* dst, const float* src, int64_t n) const override {
    Note("Copy");
    inner_.Copy(dst, src, n);
  }
  void AddInto(float* acc, const float* x, int64_t n) const override {
    Note("AddInto");
    inner_.AddInto(acc, x, n);
  }
  void MoveAndZero(float* dst, float* src, int64_t n) const override {
    Note("MoveAndZero");
    inner_.MoveAndZero(dst, src, n);
  }
  void Scale(float* x, int64_t n, double factor) const override {
    Note("Scale");
    inner_.Scale(x, n, factor);
  }
  void SumSquaresPartials(const float* x, int64_t n, int64_t block,
                          double* partials) const override {
    Note("SumSquaresPartials");
    inner_.SumSquaresPartials(x, n, block, partials);
  }
  void AdamWUpdate(float* p, const float* g, float* m, float* v, int64_t n,
                   const AdamWCoefficients& c) const override {
    Note("AdamWUpdate");
    inner_.AdamWUpdate(p, g, m, v, n, c);
  }

 private:
  void Note(const char* op) const {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_[op];
  }
  const Backend& inner_;
  const bool host_;
  mutable std::mutex mu_;
  mutable std::map<std::string, int64_t> calls_;
  mutable int64_t allocated_bytes_ = 0;
};

// Every op of the table. RecordingBackend derives from the abstract Backend, so the compiler makes
// it override each one; this list must name each override once.
const std::vector<std::string> kModelOps = {
    "LinearForward",     "LinearBackward",    "RMSNormForward",   "RMSNormAddForward",
    "RMSNormBackward",   "RopeForward",       "RopeBackward",     "AttentionForward",
    "AttentionBackward", "SwiGLUForward",     "SwiGLUBackward",   "EmbeddingForward",
    "EmbeddingBackward", "LmHeadLossForward", "LmHeadLossForwardBackward", "LmHeadLogits"};
const std::vector<std::string> kInferenceOps = {"EmbeddingForwardStored", "MatVec",
                                                "AttentionDecode"};
const std::vector<std::string> kBufferOps = {
    "Allocate", "CopyFromHost",       "CopyToHost",  "FillRopeTable", "Zero", "Copy", "AddInto",
    "MoveAndZero", "Scale", "SumSquaresPartials", "AdamWUpdate"};

const std::string kFixture = std::string(REPLICA_TEST_DATA) + "/olmo3/tiny-gqa";

bool SameBits(const FlatBuffer& a, const FlatBuffer& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Random tokens in [0, V) and next-token labels with every fifth one ignored, [rows, T].
void MakeBatch(int64_t rows, int64_t T, int64_t V, uint32_t seed, std::vector<int32_t>& ids,
               std::vector<int32_t>& labels) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(V - 1));
  ids.resize(static_cast<size_t>(rows * T));
  labels.resize(ids.size());
  for (auto& t : ids) t = tok(rng);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = i % 5 == 4 ? kIgnoreLabel : tok(rng);
}

struct ModelRun {
  std::vector<float> grads, logits;
  CrossEntropySums fb, loss_only;
};

ModelRun RunModel(const Backend& backend, int64_t B, int64_t T) {
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  Olmo3Model model(config, B, T, backend);
  EXPECT_EQ(&model.backend(), &backend);
  LoadHfWeights(kFixture + "/model.safetensors", model.layout(), model.params());
  std::vector<int32_t> ids, labels;
  MakeBatch(B, T, config.vocab_size, 7, ids, labels);
  ModelRun r;
  r.fb = model.ForwardBackward(ids.data(), labels.data(), B, T, 1.0 / 100, 1e-4);
  r.grads.assign(model.grads().data(), model.grads().data() + model.grads().size());
  r.loss_only = model.ForwardLoss(ids.data(), labels.data(), B, T);
  r.logits.resize(static_cast<size_t>(B * T * config.vocab_size));
  model.ForwardLogits(ids.data(), B, T, r.logits.data());
  return r;
}

TEST(BackendSeam, ModelOverTheTableHasTheCpuBitsAndCallsEveryModelOp) {
  SetNumThreads(2);
  RecordingBackend rec(CpuBackend());
  const ModelRun want = RunModel(CpuBackend(), 2, 12);
  const ModelRun got = RunModel(rec, 2, 12);
  EXPECT_EQ(got.fb.ce_sum, want.fb.ce_sum);
  EXPECT_EQ(got.fb.lse_sq_sum, want.fb.lse_sq_sum);
  EXPECT_EQ(got.fb.tokens, want.fb.tokens);
  EXPECT_EQ(got.loss_only.ce_sum, want.loss_only.ce_sum);
  EXPECT_TRUE(SameBits(got.grads, want.grads));
  EXPECT_TRUE(SameBits(got.logits, want.logits));

  const auto calls = rec.Calls();
  for (const std::string& op : kModelOps) EXPECT_GT(calls.count(op), 0u) << op << " never called";
  // One layer's forward: 7 linears, 2 QK-norms, 2 ropes, 1 attention, 2 norm-adds, 1 SwiGLU;
  // its backward the same ops read backwards. Three forwards, one backward, L = 8 layers.
  const int64_t L = 8, forwards = 3;
  EXPECT_EQ(calls.at("LinearForward"), forwards * 7 * L);
  EXPECT_EQ(calls.at("LinearBackward"), 7 * L);
  EXPECT_EQ(calls.at("RMSNormForward"), forwards * (2 * L + 1));
  EXPECT_EQ(calls.at("RMSNormAddForward"), forwards * 2 * L);
  EXPECT_EQ(calls.at("RMSNormBackward"), 4 * L + 1);
  EXPECT_EQ(calls.at("RopeForward"), forwards * 2 * L);
  EXPECT_EQ(calls.at("RopeBackward"), 2 * L);
  EXPECT_EQ(calls.at("AttentionForward"), forwards * L);
  EXPECT_EQ(calls.at("AttentionBackward"), L);
  EXPECT_EQ(calls.at("SwiGLUBackward"), L);
  // The layer backward zeroes its gradient scratch once; the LM head's and the residual stream's
  // gradients are zeroed once per backward.
  EXPECT_EQ(calls.at("Zero"), L + 2);
}

FlatBuffer CopyOf(const FlatBuffer& b) {
  FlatBuffer c(b.size());
  std::memcpy(c.data(), b.data(), b.size() * sizeof(float));
  return c;
}

struct StepRun {
  FlatBuffer params, m, v;
  std::vector<StepOutcome> outcomes;
};

// Two optimizer steps of TrainStep (4 rows, micro-batches of 2: the accumulation tree sums two
// leaves) with the model, AdamW and the step all over `backend`.
StepRun RunTrainSteps(const Backend& backend) {
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  const int64_t mu = 2, rows = 4, T = 10;
  Olmo3Model model(config, mu, T, backend);
  LoadHfWeights(kFixture + "/model.safetensors", model.layout(), model.params());
  AdamWConfig ac;
  ac.max_grad_norm = 0.05;  // clipping active
  AdamW adam(model.layout(), ac, model.backend());
  SkipStepRule skip(SkipStepConfig{});
  LocalGradReducer reducer;
  TrainStep step(model, reducer, adam, skip, mu, 1e-4);
  StepRun r;
  for (int k = 0; k < 2; ++k) {
    std::vector<int32_t> ids, labels;
    MakeBatch(rows, T, config.vocab_size, 100 + k, ids, labels);
    r.outcomes.push_back(step.Run(ids.data(), labels.data(), rows, T, 1e-3));
  }
  r.params = std::move(model.params());
  r.m = CopyOf(adam.m());
  r.v = CopyOf(adam.v());
  return r;
}

// The memory the ops work on comes from the backend: the model's parameters, gradients,
// activation arena, RoPE tables and LM-head workspace (its backward scratch on the first
// backward), then the optimizer's m and v, every byte of them through Allocate.
TEST(BackendSeam, TheModelAndTheOptimizerAllocateTheirBuffersThroughTheBackend) {
  RecordingBackend rec(CpuBackend());
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  const int64_t B = 2, T = 12;
  Olmo3Model model(config, B, T, rec);
  const int64_t params = static_cast<int64_t>(model.layout().total_floats());
  std::vector<RopeParams> distinct;  // one table per distinct rotation
  for (int64_t l = 0; l < config.num_layers; ++l) {
    bool seen = false;
    for (const RopeParams& p : distinct) seen = seen || p.SameMath(config.RopeFor(l));
    if (!seen) distinct.push_back(config.RopeFor(l));
  }
  const int64_t tables =
      static_cast<int64_t>(distinct.size() * RopeTableBytesOf(T, config.head_dim));
  const int64_t D = config.hidden_size, V = config.vocab_size;
  const int64_t model_bytes =
      (2 * params + static_cast<int64_t>(model.activation_arena_floats())) * sizeof(float) +
      tables + static_cast<int64_t>(LmHeadWorkspace::Bytes(B * T, V, D, false));
  EXPECT_EQ(rec.AllocatedBytes(), model_bytes);
  std::vector<int32_t> ids, labels;
  MakeBatch(B, T, V, 5, ids, labels);
  model.ForwardBackward(ids.data(), labels.data(), B, T, 1.0, 1e-4);
  const int64_t trained_bytes =
      model_bytes + static_cast<int64_t>(LmHeadWorkspace::Bytes(B * T, V, D, true) -
                                         LmHeadWorkspace::Bytes(B * T, V, D, false));
  EXPECT_EQ(rec.AllocatedBytes(), trained_bytes);
  AdamW adam(model.layout(), AdamWConfig{}, rec);
  adam.Step(model.params(), model.grads(), 1e-3, 1.0);
  EXPECT_EQ(rec.AllocatedBytes(), trained_bytes + 2 * params * int64_t{sizeof(float)});
}

TEST(BackendSeam, TrainStepAndAdamWRunOnTheModelsBackendWithTheCpuBits) {
  SetNumThreads(2);
  RecordingBackend rec(CpuBackend());
  const StepRun want = RunTrainSteps(CpuBackend());
  const StepRun got = RunTrainSteps(rec);
  ASSERT_EQ(got.outcomes.size(), want.outcomes.size());
  for (size_t k = 0; k < want.outcomes.size(); ++k) {
    EXPECT_EQ(got.outcomes[k].loss, want.outcomes[k].loss);
    EXPECT_EQ(got.outcomes[k].grad_norm, want.outcomes[k].grad_norm);
    EXPECT_EQ(got.outcomes[k].clip_coef, want.outcomes[k].clip_coef);
    EXPECT_LT(want.outcomes[k].clip_coef, 1.0);
    EXPECT_FALSE(want.outcomes[k].skipped);
  }
  EXPECT_TRUE(SameBits(got.params, want.params));
  EXPECT_TRUE(SameBits(got.m, want.m));
  EXPECT_TRUE(SameBits(got.v, want.v));
  // Per step: the gradient buffer zeroed once, then two micro-batches (each a forward+backward
  // that zeroes L + 2 times), one tree merge (move the first leaf aside, add it back), one norm,
  // and one AdamW call per parameter tensor.
  const auto calls = rec.Calls();
  const int64_t steps = 2, micro = 2, L = 8;
  const int64_t tensors = static_cast<int64_t>(
      ModelConfig::FromHfFile(kFixture + "/config.json").BuildLayout().views().size());
  EXPECT_EQ(calls.at("Zero"), steps * (1 + micro * (L + 2)));
  EXPECT_EQ(calls.at("LmHeadLossForwardBackward"), steps * micro);
  EXPECT_EQ(calls.at("MoveAndZero"), steps);
  EXPECT_EQ(calls.at("AddInto"), steps);
  EXPECT_EQ(calls.at("SumSquaresPartials"), steps);
  EXPECT_EQ(calls.at("AdamWUpdate"), steps * tensors);
}

// ZeRO-1 on two ranks (threads): load state, accumulate, reduce-scatter + norm, scale, step,
// gather. Returns rank 0's parameters and gathered m.
std::pair<FlatBuffer, FlatBuffer> RunZero1(const Backend& backend, const ParamLayout& layout) {
  FlatBuffer out_params, out_m;
  std::mutex mu;
  parallel::RunThreadGroup(2, [&](parallel::Communicator& comm) {
    const size_t n = layout.total_floats();
    FlatBuffer params(n), m0(n), v0(n);
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    for (size_t i = 0; i < n; ++i) params.data()[i] = normal(rng);
    for (size_t i = 0; i < n; ++i) m0.data()[i] = normal(rng) * 0.1f;
    for (size_t i = 0; i < n; ++i) {
      const float z = normal(rng);
      v0.data()[i] = z * z;  // a second moment is never negative
    }
    UpdateRuleConfig ac;
    ac.no_decay = {};
    parallel::ShardedOptimizer opt(layout, MakeUpdateRule(layout, ac),
                                   parallel::GatherPolicy::kAllGatherParams, comm, backend);
    opt.LoadState(OptimizerState{std::move(m0), std::move(v0), 3});
    TreeAccumulator acc(n, 2, backend);
    FlatBuffer g(n);
    for (int leaf = 0; leaf < 2; ++leaf) {
      std::mt19937 grng(10 * comm.rank() + leaf);
      for (size_t i = 0; i < n; ++i) g.data()[i] += normal(grng);
      acc.Add(g, {});
    }
    parallel::TreeReduceScatter(comm, g.data(), opt.plan(), backend);
    const double norm = parallel::ShardedGradNorm(comm, g.data(), opt.plan(), backend);
    backend.Scale(g.data() + opt.shard_begin(),
                  static_cast<int64_t>(opt.shard_end() - opt.shard_begin()), 0.5);
    opt.Step(params, g, 1e-3, ClipCoefficient(norm, 1.0));
    const OptimizerState* full = opt.SaveState();  // collective; rank 0 gets the full state
    std::lock_guard<std::mutex> lock(mu);
    if (comm.rank() == 0) {
      out_params = std::move(params);
      out_m = CopyOf(full->m);
    }
  });
  return {std::move(out_params), std::move(out_m)};
}

TEST(BackendSeam, ZeroOneAndTheCheckpointSnapshotRunOnTheBackendWithTheCpuBits) {
  SetNumThreads(2);
  const ModelConfig config = ModelConfig::FromHfFile(kFixture + "/config.json");
  const ParamLayout layout = config.BuildLayout();
  RecordingBackend rec(CpuBackend());
  const auto want = RunZero1(CpuBackend(), layout);
  const auto got = RunZero1(rec, layout);
  EXPECT_TRUE(SameBits(got.first, want.first));
  EXPECT_TRUE(SameBits(got.second, want.second));
  auto calls = rec.Calls();
  for (const char* op : {"Copy", "AddInto", "MoveAndZero", "Scale", "SumSquaresPartials",
                         "AdamWUpdate"}) {
    EXPECT_GT(calls.count(op), 0u) << op << " never called by ZeRO-1";
  }

  // The checkpoint writers' snapshots (params, m, v) are three backend copies each: the
  // trainer's sharded writer (its whole range on one process) and the version-1 writer.
  {
    const test::TempDir dir("backend-seam");
    SingleProcessGroup group;
    ShardedCheckpointWriter writer({.run_dir = dir.str(), .keep = 1, .background = true}, group,
                                   rec);
    writer.Save(1, layout,
                {0, layout.total_floats(), got.first.data(), got.second.data(),
                 got.second.data()},
                1, nlohmann::json::object(), nlohmann::json());
    writer.Finish();
  }
  EXPECT_EQ(rec.Calls().at("Copy"), calls.at("Copy") + 3);
  {
    const test::TempDir dir("backend-seam");
    CheckpointWriter writer({.run_dir = dir.str(), .keep = 1, .background = true}, rec);
    writer.Save(1, layout, got.first, got.second, got.second, 1, nlohmann::json::object(),
                nlohmann::json());
    writer.Finish();
  }
  EXPECT_EQ(rec.Calls().at("Copy"), calls.at("Copy") + 6);
}

// The files of a checkpoint directory's step-1/, by name (the manifest and state carry no
// backend-dependent bytes).
std::map<std::string, std::string> CheckpointFiles(const std::string& run_dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(run_dir + "/checkpoints/step-00000001"))
    files[e.path().filename().string()] = ReadFile(e.path().string());
  return files;
}

// ZeRO-1's collectives and both checkpoint writers on a backend whose memory is not the host's:
// what is sent, gathered and written goes through CopyToHost / CopyFromHost, with the CPU's bits
// and the same checkpoint files, synchronous writes included.
TEST(BackendSeam, CollectivesAndCheckpointsOnABackendNotTheHostsCopyThroughTheHost) {
  SetNumThreads(2);
  RecordingBackend device(CpuBackend(), /*host=*/false);
  const ParamLayout layout = ModelConfig::FromHfFile(kFixture + "/config.json").BuildLayout();
  const auto want = RunZero1(CpuBackend(), layout);
  const auto got = RunZero1(device, layout);
  EXPECT_TRUE(SameBits(got.first, want.first));
  EXPECT_TRUE(SameBits(got.second, want.second));
  const auto calls = device.Calls();
  EXPECT_GT(calls.count("CopyToHost"), 0u);
  EXPECT_GT(calls.count("CopyFromHost"), 0u);
  for (const bool background : {false, true}) {
    SCOPED_TRACE(background ? "background" : "synchronous");
    const test::TempDir host_dir("backend-seam"), device_dir("backend-seam");
    for (const auto& [dir, backend] : {std::pair<std::string, const Backend*>{host_dir.str(), &CpuBackend()},
                                       {device_dir.str(), &device}}) {
      SingleProcessGroup group;
      ShardedCheckpointWriter sharded({.run_dir = dir + "/sharded", .keep = 1,
                                       .background = background}, group, *backend);
      sharded.Save(1, layout,
                   {0, layout.total_floats(), got.first.data(), got.second.data(),
                    got.second.data()},
                   1, nlohmann::json::object(), nlohmann::json());
      sharded.Finish();
      CheckpointWriter whole({.run_dir = dir + "/whole", .keep = 1, .background = background},
                             *backend);
      whole.Save(1, layout, got.first, got.second, got.second, 1, nlohmann::json::object(),
                 nlohmann::json());
      whole.Finish();
    }
    for (const char* kind : {"/sharded", "/whole"}) {
      const auto a = CheckpointFiles(host_dir.str() + kind), b = CheckpointFiles(device_dir.str() + kind);
      EXPECT_FALSE(a.empty()) << kind;
      for (const auto& [name, bytes] : a) {
        if (name.find("safetensors") == std::string::npos) continue;
        ASSERT_TRUE(b.count(name)) << kind << " " << name;
        EXPECT_TRUE(bytes == b.at(name)) << kind << " " << name << " differs";
      }
    }
  }
  EXPECT_GT(device.Calls().at("CopyToHost"), calls.at("CopyToHost"));
}

// Evaluation and cached decoding over the stored weights: the full forward's logits, a prefill
// and steps past the sliding window (the cache's ring wraps), every logit returned.
std::vector<float> RunDecode(const Backend& backend) {
  InferenceModel m(ModelWeights::Open(kFixture), backend);
  const int64_t T = 3 * m.config().sliding_window, V = m.config().vocab_size;
  std::vector<int32_t> ids, labels;
  MakeBatch(1, T, V, 11, ids, labels);
  std::vector<float> out(static_cast<size_t>(T * V));
  m.ForwardLogits(ids.data(), 1, T, out.data());
  Decoder dec(m, T);
  std::span<const float> l = dec.Prefill({ids.data(), 2});
  out.insert(out.end(), l.begin(), l.end());
  for (int64_t p = 2; p < T; ++p) {
    l = dec.Step(ids[p]);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

TEST(BackendSeam, InferenceOverTheTableHasTheCpuBitsAndCallsEveryInferenceOp) {
  SetNumThreads(2);
  RecordingBackend rec(CpuBackend());
  EXPECT_TRUE(SameBits(RunDecode(rec), RunDecode(CpuBackend())));
  const auto calls = rec.Calls();
  for (const std::string& op : kInferenceOps) {
    EXPECT_GT(calls.count(op), 0u) << op << " never called";
  }
  // A step is one block per layer: 7 projections and one cached attention each, then the head.
  const ModelConfig c = ModelConfig::FromHfFile(kFixture + "/config.json");
  const int64_t L = c.num_layers, steps = 3 * c.sliding_window - 2;
  EXPECT_EQ(calls.at("AttentionDecode"), steps * L);
  EXPECT_EQ(calls.at("MatVec"), steps * (7 * L + 1) + 1);  // + the prefill's last-row logits
}

// A backend that is not the host's: the model's RoPE tables, the widened weights and norms of
// evaluation and decoding are filled through CopyFromHost, the logits handed out read through
// CopyToHost, and every result bit is the CPU's.
TEST(BackendSeam, ABackendNotTheHostsIsFilledAndReadThroughItsCopies) {
  SetNumThreads(2);
  RecordingBackend device(CpuBackend(), /*host=*/false);
  EXPECT_TRUE(SameBits(RunDecode(device), RunDecode(CpuBackend())));
  const auto calls = device.Calls();
  EXPECT_GT(calls.count("CopyFromHost"), 0u);
  EXPECT_GT(calls.count("CopyToHost"), 0u);
  EXPECT_GT(calls.count("FillRopeTable"), 0u);
}

TEST(BackendSeam, EveryOpOfTheTableIsOnAPath) {
  // The union of what the scenarios above call, run again on one recorder that is not the
  // host's (so the copies between host and backend are on a path too).
  SetNumThreads(2);
  RecordingBackend rec(CpuBackend(), /*host=*/false);
  RunModel(rec, 1, 6);
  RunTrainSteps(rec);
  RunZero1(rec, ModelConfig::FromHfFile(kFixture + "/config.json").BuildLayout());
  RunDecode(rec);
  const auto calls = rec.Calls();
  std::vector<std::string> all = kModelOps;
  all.insert(all.end(), kInferenceOps.begin(), kInferenceOps.end());
  all.insert(all.end(), kBufferOps.begin(), kBufferOps.end());
  for (const std::string& op : all) EXPECT_GT(calls.count(op), 0u) << op << " never called";
  EXPECT_EQ(calls.size(), all.size()) << "an op was recorded that the list above does not name";
}

}  // namespace
}  // namespace replica
