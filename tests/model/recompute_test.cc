// Activation recomputation (model/recompute.h) changes no bit: for every policy, on the fixtures'
// weights and a tied-head variant, in fp32 (and bf16 on one), at 1 and 2 threads, the loss sums, the
// gradients and the parameters after a few plain gradient steps are bit-identical to keeping every
// activation; and the arena a model allocates shrinks as the policy promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "core/threads.h"
#include "hf/hf_weights.h"
#include "io/safetensors.h"
#include "model/olmo3.h"
#include "ops/registry.h"

namespace replica {
namespace {

const std::string kData = REPLICA_TEST_DATA;

struct Batch {
  std::vector<int32_t> ids, labels;
  int64_t B = 0, T = 0;
};

Batch ReadBatch(const std::string& dir) {
  SafetensorsFile io = SafetensorsFile::Open(dir + "/io.safetensors");
  Batch b;
  b.B = io.Get("input_ids").shape[0];
  b.T = io.Get("input_ids").shape[1];
  for (int64_t v : io.ReadI64("input_ids")) b.ids.push_back(static_cast<int32_t>(v));
  for (int64_t v : io.ReadI64("labels")) b.labels.push_back(static_cast<int32_t>(v));
  return b;
}

// What a short run produced: per step the loss sums and the gradient, then the final weights.
struct Trace {
  std::vector<double> ce, z;
  std::vector<std::vector<float>> grads;
  std::vector<float> params;
};

// Three steps of p -= 0.05 g on the fixture batch, then one on a batch of B-1 rows (fewer rows
// than the arena was carved for).
Trace Train(const ModelConfig& config, const std::vector<float>& init, const Batch& b,
          Precision precision, Recompute policy) {
  Olmo3Model model(config, b.B, b.T, SelectBackend("cpu", precision), policy);
  EXPECT_EQ(model.recompute(), policy);
  std::memcpy(model.params().data(), init.data(), init.size() * sizeof(float));
  Trace t;
  for (int step = 0; step < 4; ++step) {
    const int64_t B = step < 3 ? b.B : b.B - 1;
    model.grads().Zero();
    const CrossEntropySums s =
        model.ForwardBackward(b.ids.data(), b.labels.data(), B, b.T, 1.0 / (B * b.T), 1e-4);
    t.ce.push_back(s.ce_sum);
    t.z.push_back(s.lse_sq_sum);
    const float* g = model.grads().data();
    t.grads.emplace_back(g, g + model.grads().size());
    float* p = model.params().data();
    for (size_t i = 0; i < model.params().size(); ++i) p[i] -= 0.05f * g[i];
  }
  const float* p = model.params().data();
  t.params.assign(p, p + model.params().size());
  return t;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void ExpectSameTrace(const Trace& want, const Trace& got) {
  ASSERT_EQ(want.ce.size(), got.ce.size());
  for (size_t s = 0; s < want.ce.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    EXPECT_EQ(std::memcmp(&want.ce[s], &got.ce[s], sizeof(double)), 0) << want.ce[s] << " vs "
                                                                        << got.ce[s];
    EXPECT_EQ(std::memcmp(&want.z[s], &got.z[s], sizeof(double)), 0);
    EXPECT_TRUE(SameBits(want.grads[s], got.grads[s])) << "gradients differ";
  }
  EXPECT_TRUE(SameBits(want.params, got.params)) << "weights after the steps differ";
}

struct Model {
  std::string name;
  ModelConfig config;
  std::vector<float> init;
  Batch batch;
};

std::vector<Model> Models() {
  std::vector<Model> out;
  for (const char* name : {"tiny-gqa", "tiny-mha", "tiny-yarn"}) {
    const std::string dir = kData + "/olmo3/" + name;
    Model m{name, ModelConfig::FromHfFile(dir + "/config.json"), {}, ReadBatch(dir)};
    FlatBuffer params(m.config.BuildLayout().total_floats());
    LoadHfWeights(dir, m.config.BuildLayout(), params);
    m.init.assign(params.data(), params.data() + params.size());
    out.push_back(std::move(m));
  }
  // Tied LM head: the embedding's gradient gets both ends' contributions.
  Model tied = out[0];
  tied.name = "tiny-gqa-tied";
  tied.config.tie_word_embeddings = true;
  const ParamLayout untied = out[0].config.BuildLayout(), layout = tied.config.BuildLayout();
  tied.init.assign(layout.total_floats(), 0.0f);
  for (const ParamView& v : layout.views()) {
    const float* from = out[0].init.data() + untied.Get(v.name).offset;
    std::copy(from, from + v.numel, tied.init.begin() + static_cast<std::ptrdiff_t>(v.offset));
  }
  out.push_back(std::move(tied));
  return out;
}

TEST(Recompute, EveryPolicyIsBitIdenticalToKeepingEverything) {
  for (const Model& m : Models()) {
    // bf16 (its own GEMM route and operand rounding) on the first model only: the slow one here.
    std::vector<Precision> precisions = {Precision::kFp32};
    if (m.name == "tiny-gqa") precisions.push_back(Precision::kBf16);
    for (Precision precision : precisions) {
      SetNumThreads(1);
      const Trace want = Train(m.config, m.init, m.batch, precision, Recompute::kNone);
      for (int threads : {1, 2}) {
        SetNumThreads(threads);
        for (Recompute policy : {Recompute::kNone, Recompute::kMlp, Recompute::kFull}) {
          SCOPED_TRACE(m.name + " " + PrecisionName(precision) + " " + RecomputeName(policy) +
                       " threads " + std::to_string(threads));
          ExpectSameTrace(want, Train(m.config, m.init, m.batch, precision, policy));
        }
      }
    }
  }
  SetNumThreads(0);
}

// The arena holds per layer only what the policy keeps, plus one working layer.
TEST(Recompute, ArenaShrinksByWhatThePolicyRecomputes) {
  const ModelConfig c = ModelConfig::FromHfFile(kData + "/olmo3/tiny-gqa/config.json");
  const int64_t B = 2, T = 32, N = B * T;  // N a multiple of 16: no alignment padding
  const int64_t L = c.num_layers, D = c.hidden_size, I = c.intermediate_size, H = c.num_heads;
  const int64_t Qd = H * c.head_dim, KVd = c.num_kv_heads * c.head_dim;
  auto floats = [&](Recompute r) { return static_cast<int64_t>(Olmo3Model::ActivationArenaFloats(c, B, T, r)); };
  const int64_t none = floats(Recompute::kNone), mlp = floats(Recompute::kMlp),
                full = floats(Recompute::kFull);
  // mlp: g, u, s [N, I] and m [N, D] once instead of per layer.
  EXPECT_EQ(none - mlp, (L - 1) * N * (3 * I + D));
  // full: everything but x once instead of per layer.
  const int64_t rest = N * (3 * D + 3 * Qd + 3 * KVd + 3 * I + H + 4);
  EXPECT_EQ(none - full, (L - 1) * rest);
  for (Recompute r : {Recompute::kNone, Recompute::kMlp, Recompute::kFull}) {
    Olmo3Model model(c, B, T, CpuBackend(), r);
    EXPECT_EQ(model.activation_arena_floats(), static_cast<uint64_t>(floats(r))) << RecomputeName(r);
  }
}

TEST(Recompute, ParsesTheConfigNames) {
  EXPECT_EQ(ParseRecompute("none", "k"), Recompute::kNone);
  EXPECT_EQ(ParseRecompute("mlp", "k"), Recompute::kMlp);
  EXPECT_EQ(ParseRecompute("full", "k"), Recompute::kFull);
  try {
    ParseRecompute("auto", "config key 'train.recompute'");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.recompute"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'auto'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replica
