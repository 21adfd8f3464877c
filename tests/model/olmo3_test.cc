// The Olmo 3 model against the float64 fixtures (logits, losses, every gradient), and properties
// the fixtures cannot show: batch rows are independent, T = 1 works, GQA/MQA and tied heads have
// correct gradients (finite differences on the whole model), results are bit-identical for any
// thread count, and ForwardLoss agrees with ForwardBackward.
#include "model/olmo3.h"
#include "testing/random_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ops/cpu/cpu_backend.h"
#include "core/error.h"
#include "core/threads.h"
#include "io/safetensors.h"
#include "hf/hf_weights.h"

namespace replica {
namespace {

const std::string kData = REPLICA_TEST_DATA;

double RelFro(const float* a, const float* b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / den);
}

std::vector<int32_t> ToI32(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

struct Fixture {
  std::string dir;
  ModelConfig config;
  std::unique_ptr<Olmo3Model> model;
  SafetensorsFile io;
  std::vector<int32_t> ids, labels;
  int64_t B = 0, T = 0;

  explicit Fixture(const std::string& name, int64_t max_batch = 0)
      : dir(kData + "/olmo3/" + name),
        config(ModelConfig::FromHfFile(dir + "/config.json")),
        io(SafetensorsFile::Open(dir + "/io.safetensors")) {
    const TensorInfo& t = io.Get("input_ids");
    B = t.shape[0];
    T = t.shape[1];
    ids = ToI32(io.ReadI64("input_ids"));
    labels = ToI32(io.ReadI64("labels"));
    model = std::make_unique<Olmo3Model>(config, max_batch ? max_batch : B, T, CpuBackend());
    LoadHfWeights(dir, model->layout(), model->params());
  }
  int64_t Tokens() const {
    int64_t n = 0;
    for (int32_t y : labels) n += y != kIgnoreLabel;
    return n;
  }
};

class FixtureTest : public ::testing::TestWithParam<const char*> {};

TEST_P(FixtureTest, LogitsMatchFloat64Reference) {
  Fixture f(GetParam());
  const int64_t V = f.config.vocab_size;
  std::vector<float> logits(f.B * f.T * V);
  f.model->ForwardLogits(f.ids.data(), f.B, f.T, logits.data());
  const std::vector<float> ref = f.io.ReadF32("logits");
  double max_abs = 0;
  int64_t top1 = 0;
  for (int64_t r = 0; r < f.B * f.T; ++r) {
    const float* a = logits.data() + r * V;
    const float* b = ref.data() + r * V;
    for (int64_t v = 0; v < V; ++v) max_abs = std::max(max_abs, std::abs(double(a[v]) - b[v]));
    top1 += std::max_element(a, a + V) - a == std::max_element(b, b + V) - b;
  }
  const double rel = RelFro(logits.data(), ref.data(), ref.size());
  std::printf("[%s] logits: rel_fro %.3g  max_abs %.3g  top1 %ld/%ld\n", GetParam(), rel, max_abs,
              static_cast<long>(top1), static_cast<long>(f.B * f.T));
  EXPECT_LT(rel, 3e-6);
  EXPECT_LT(max_abs, 1e-5);
  EXPECT_EQ(top1, f.B * f.T);
}

TEST_P(FixtureTest, LossAndEveryGradientMatchFloat64Reference) {
  Fixture f(GetParam());
  const int64_t N = f.Tokens();
  f.model->grads().Zero();
  CrossEntropySums s = f.model->ForwardBackward(f.ids.data(), f.labels.data(), f.B, f.T, 1.0 / N, 0.0);
  ASSERT_EQ(s.tokens, N);
  const double loss = s.ce_sum / N, z_loss = s.lse_sq_sum / N;
  const double loss_ref = f.io.ReadF64("loss")[0], z_ref = f.io.ReadF64("z_loss")[0];
  std::printf("[%s] loss %.9f (ref %.9f, |d| %.2g)  z_loss %.7f (ref %.7f, |d| %.2g)\n",
              GetParam(), loss, loss_ref, std::abs(loss - loss_ref), z_loss, z_ref,
              std::abs(z_loss - z_ref));
  EXPECT_NEAR(loss, loss_ref, 2e-6);
  EXPECT_NEAR(z_loss, z_ref, 2e-5);  // z_loss ≈ 36-39: 2e-5 absolute is 5e-7 relative

  double worst = 0;
  std::string worst_name;
  for (const ParamView& v : f.model->layout().views()) {
    const std::vector<float> ref = f.io.ReadF32("grad." + v.name);
    ASSERT_EQ(ref.size(), v.numel) << v.name;
    const double rel = RelFro(f.model->grads().data() + v.offset, ref.data(), v.numel);
    EXPECT_LT(rel, 5e-6) << v.name;
    if (rel > worst) worst = rel, worst_name = v.name;
  }
  std::printf("[%s] gradients: worst rel_fro %.3g (%s)\n", GetParam(), worst, worst_name.c_str());

  // ForwardLoss runs the same forward and the same fused LM head: identical sums.
  CrossEntropySums fl = f.model->ForwardLoss(f.ids.data(), f.labels.data(), f.B, f.T);
  EXPECT_EQ(fl.ce_sum, s.ce_sum);
  EXPECT_EQ(fl.lse_sq_sum, s.lse_sq_sum);
  EXPECT_EQ(fl.tokens, s.tokens);
}

// Gradients accumulate (+=): two calls give twice one call. Not bit-exactly: a GEMM with beta = 1
// adds its product to C inside the kernel (possibly fused), so each element rounds once more.
TEST_P(FixtureTest, GradientsAccumulate) {
  Fixture f(GetParam());
  FlatBuffer& g = f.model->grads();
  g.Zero();
  f.model->ForwardBackward(f.ids.data(), f.labels.data(), f.B, f.T, 0.01, 1e-4);
  std::vector<float> twice(g.data(), g.data() + g.size());
  for (float& x : twice) x *= 2;
  f.model->ForwardBackward(f.ids.data(), f.labels.data(), f.B, f.T, 0.01, 1e-4);
  for (const ParamView& v : f.model->layout().views()) {
    EXPECT_LT(RelFro(g.data() + v.offset, twice.data() + v.offset, v.numel), 1e-6) << v.name;
  }
}

TEST_P(FixtureTest, BitIdenticalForOneAndTwoThreads) {
  Fixture f(GetParam());
  const int64_t V = f.config.vocab_size;
  std::vector<float> logits[2], grads[2];
  double ce[2];
  for (int t = 0; t < 2; ++t) {
    SetNumThreads(t + 1);
    logits[t].resize(f.B * f.T * V);
    f.model->ForwardLogits(f.ids.data(), f.B, f.T, logits[t].data());
    f.model->grads().Zero();
    ce[t] = f.model->ForwardBackward(f.ids.data(), f.labels.data(), f.B, f.T, 0.01, 1e-4).ce_sum;
    grads[t].assign(f.model->grads().data(), f.model->grads().data() + f.model->grads().size());
  }
  SetNumThreads(0);
  EXPECT_EQ(ce[0], ce[1]);
  EXPECT_EQ(0, std::memcmp(logits[0].data(), logits[1].data(), logits[0].size() * 4));
  EXPECT_EQ(0, std::memcmp(grads[0].data(), grads[1].data(), grads[0].size() * 4));
}

// Each batch row is an independent sequence: running rows one at a time gives the same logits
// and, summed, the same gradients (up to float rounding: GEMM blocking depends on the row count).
TEST_P(FixtureTest, BatchRowsAreIndependent) {
  Fixture f(GetParam());
  const int64_t V = f.config.vocab_size, B = f.B, T = f.T;
  std::vector<float> batch(B * T * V), row(T * V);
  f.model->ForwardLogits(f.ids.data(), B, T, batch.data());
  FlatBuffer& g = f.model->grads();
  g.Zero();
  f.model->ForwardBackward(f.ids.data(), f.labels.data(), B, T, 0.01, 1e-4);
  std::vector<float> batch_grads(g.data(), g.data() + g.size());
  g.Zero();
  for (int64_t b = 0; b < B; ++b) {
    f.model->ForwardLogits(f.ids.data() + b * T, 1, T, row.data());
    EXPECT_LT(RelFro(row.data(), batch.data() + b * T * V, row.size()), 1e-6) << "row " << b;
    f.model->ForwardBackward(f.ids.data() + b * T, f.labels.data() + b * T, 1, T, 0.01, 1e-4);
  }
  for (const ParamView& v : f.model->layout().views()) {
    EXPECT_LT(RelFro(g.data() + v.offset, batch_grads.data() + v.offset, v.numel), 1e-5) << v.name;
  }
}

// T = 1: position 0 sees only itself, so its logits equal position 0 of the full run.
TEST_P(FixtureTest, SingleTokenSequences) {
  Fixture f(GetParam());
  const int64_t V = f.config.vocab_size;
  std::vector<float> full(f.B * f.T * V), one(f.B * V);
  f.model->ForwardLogits(f.ids.data(), f.B, f.T, full.data());
  std::vector<int32_t> first(f.B), first_labels(f.B);
  for (int64_t b = 0; b < f.B; ++b) first[b] = f.ids[b * f.T], first_labels[b] = f.ids[b * f.T + 1];
  f.model->ForwardLogits(first.data(), f.B, 1, one.data());
  for (int64_t b = 0; b < f.B; ++b) {
    EXPECT_LT(RelFro(one.data() + b * V, full.data() + b * f.T * V, V), 5e-6);
  }
  f.model->grads().Zero();
  CrossEntropySums s = f.model->ForwardBackward(first.data(), first_labels.data(), f.B, 1, 1.0, 0.0);
  EXPECT_EQ(s.tokens, f.B);
  EXPECT_TRUE(std::isfinite(s.ce_sum));
}

INSTANTIATE_TEST_SUITE_P(Olmo3, FixtureTest, ::testing::Values("tiny-mha", "tiny-gqa", "tiny-yarn"));

TEST(Olmo3Model, RejectsBadInput) {
  Fixture f("tiny-mha");
  std::vector<int32_t> ids = f.ids, labels = f.labels;
  ids[5] = static_cast<int32_t>(f.config.vocab_size);
  EXPECT_THROW(f.model->ForwardLoss(ids.data(), labels.data(), f.B, f.T), Error);
  ids[5] = -1;
  EXPECT_THROW(f.model->ForwardLoss(ids.data(), labels.data(), f.B, f.T), Error);
  ids = f.ids;
  labels[3] = -7;
  EXPECT_THROW(f.model->ForwardBackward(ids.data(), labels.data(), f.B, f.T, 1, 0), Error);
  labels = f.labels;
  EXPECT_THROW(f.model->ForwardLoss(ids.data(), labels.data(), f.B + 1, f.T), Error);
  EXPECT_THROW(f.model->ForwardLoss(ids.data(), labels.data(), f.B, f.T + 1), Error);
  EXPECT_THROW(f.model->ForwardLoss(ids.data(), labels.data(), 0, f.T), Error);
}

// ---- tiny-yarn: the full-attention layers use YaRN, the sliding ones plain RoPE ---------------

TEST(Olmo3Yarn, LayersGetTheirOwnRope) {
  const ModelConfig c = ModelConfig::FromHfFile(kData + "/olmo3/tiny-yarn/config.json");
  for (int64_t l = 0; l < 3; ++l) EXPECT_EQ(c.RopeFor(l).type, RopeType::kDefault) << l;
  EXPECT_EQ(c.RopeFor(3).type, RopeType::kYarn);
  EXPECT_EQ(c.RopeFor(3).factor, 8.0);
  EXPECT_EQ(c.RopeFor(3).original_max_position_embeddings, 32);
  EXPECT_EQ(c.RopeFor(0).theta, c.RopeFor(3).theta);
}

struct LogitsDeviation {
  double max_abs = 0, max_kl = 0;  // against the stored float64 logits; KL(stored ‖ ours) per token
  int64_t top1 = 0, rows = 0;
};

// The tiny-yarn io.safetensors forward with the config after `edit`.
LogitsDeviation TinyYarnLogits(const std::function<void(ModelConfig&)>& edit) {
  const std::string dir = kData + "/olmo3/tiny-yarn";
  ModelConfig c = ModelConfig::FromHfFile(dir + "/config.json");
  edit(c);
  SafetensorsFile io = SafetensorsFile::Open(dir + "/io.safetensors");
  const std::vector<int32_t> ids = ToI32(io.ReadI64("input_ids"));
  const int64_t B = io.Get("input_ids").shape[0], T = io.Get("input_ids").shape[1];
  const int64_t V = c.vocab_size;
  Olmo3Model m(c, B, T, CpuBackend());
  LoadHfWeights(dir, m.layout(), m.params());
  std::vector<float> logits(B * T * V);
  m.ForwardLogits(ids.data(), B, T, logits.data());
  const std::vector<float> ref = io.ReadF32("logits");
  LogitsDeviation d;
  d.rows = B * T;
  for (int64_t r = 0; r < B * T; ++r) {
    const float* a = logits.data() + r * V;
    const float* b = ref.data() + r * V;
    double ma = -INFINITY, mb = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
      d.max_abs = std::max(d.max_abs, std::abs(double(a[v]) - b[v]));
      ma = std::max(ma, double(a[v]));
      mb = std::max(mb, double(b[v]));
    }
    double sa = 0, sb = 0;
    for (int64_t v = 0; v < V; ++v) sa += std::exp(a[v] - ma), sb += std::exp(b[v] - mb);
    const double la = ma + std::log(sa), lb = mb + std::log(sb);
    double kl = 0;
    for (int64_t v = 0; v < V; ++v) {
      const double lp = b[v] - lb, lq = a[v] - la;
      kl += std::exp(lp) * (lp - lq);
    }
    d.max_kl = std::max(d.max_kl, kl);
    d.top1 += std::max_element(a, a + V) - a == std::max_element(b, b + V) - b;
  }
  return d;
}

// The right computation is within the parity bounds (KL <= 1e-8, |Δlogit| < 1e-5, top-1 100%);
// each YaRN mistake of the fixture README moves the logits past them, by about the amount the
// README measured in float64 (within a factor 2: the same mistake, computed in float32).
TEST(Olmo3Yarn, EachReadmeMistakeFailsParity) {
  const LogitsDeviation right = TinyYarnLogits([](ModelConfig&) {});
  std::printf("[tiny-yarn] right: max |dlogit| %.3g  max KL %.3g  top1 %ld/%ld\n", right.max_abs,
              right.max_kl, static_cast<long>(right.top1), static_cast<long>(right.rows));
  EXPECT_LT(right.max_abs, 1e-5);
  EXPECT_LT(right.max_kl, 1e-8);
  EXPECT_EQ(right.top1, right.rows);

  struct Mistake {
    const char* what;
    std::function<void(ModelConfig&)> edit;
    double readme_max_abs, readme_max_kl;
  };
  const std::vector<Mistake> mistakes = {
      {"YaRN on every layer, sliding ones included",
       [](ModelConfig& c) { c.rope_sliding = c.rope_full; }, 6.8e-1, 2.2e-2},
      {"no YaRN at all", [](ModelConfig& c) { c.rope_full = c.rope_sliding; }, 2.8e-1, 4.6e-3},
      {"original_max_position_embeddings ignored",
       [](ModelConfig& c) {
         c.rope_full.original_max_position_embeddings = c.max_position_embeddings;
       },
       3.1e-1, 4.1e-3},
      {"attention factor left out", [](ModelConfig& c) { c.rope_full.attention_factor = 1.0; },
       7.6e-2, 3.1e-4},
      {"attention factor applied once",
       [](ModelConfig& c) { c.rope_full.attention_factor = std::sqrt(c.rope_full.attention_factor); },
       4.0e-2, 8.9e-5},
      {"no floor/ceil on low/high", [](ModelConfig& c) { c.rope_full.truncate = false; }, 1.9e-2,
       1.5e-5},
  };
  for (const Mistake& k : mistakes) {
    const LogitsDeviation d = TinyYarnLogits(k.edit);
    std::printf("[tiny-yarn] %-45s max |dlogit| %.3g (README %.2g)  max KL %.3g (README %.2g)\n",
                k.what, d.max_abs, k.readme_max_abs, d.max_kl, k.readme_max_kl);
    EXPECT_GT(d.max_kl, 1e-8) << k.what;  // the parity check fails
    EXPECT_GT(d.max_abs, 1e-5) << k.what;
    EXPECT_GT(d.max_abs, 0.5 * k.readme_max_abs) << k.what;
    EXPECT_LT(d.max_abs, 2.0 * k.readme_max_abs) << k.what;
    EXPECT_GT(d.max_kl, 0.5 * k.readme_max_kl) << k.what;
    EXPECT_LT(d.max_kl, 2.0 * k.readme_max_kl) << k.what;
  }
}

// ---- Small random models: finite differences through the whole network -----------------------

ModelConfig SmallConfig(int64_t H, int64_t KV, bool tied) {
  ModelConfig c;
  c.model_type = "olmo3";
  c.vocab_size = 23;
  c.hidden_size = 8 * H;  // hd = 8
  c.intermediate_size = 20;
  c.num_layers = 2;
  c.num_heads = H;
  c.num_kv_heads = KV;
  c.head_dim = 8;
  c.rms_norm_eps = 1e-5;
  c.SetPlainRope(10000);
  c.sliding_window = 3;
  c.layer_types = {AttentionType::kSliding, AttentionType::kFull};
  c.tie_word_embeddings = tied;
  c.max_position_embeddings = 64;
  return c;
}

using test::RandomInit;

struct FdCase {
  int64_t H, KV;
  bool tied;
};

class WholeModelFd : public ::testing::TestWithParam<FdCase> {};

// For every parameter tensor, the analytic gradient of Σ(CE + z·lse²) along a random direction
// matches a central difference of ForwardLoss. T = 7 > W = 3 exercises the sliding window.
TEST_P(WholeModelFd, EveryTensorMatchesFiniteDifferences) {
  const FdCase c = GetParam();
  const ModelConfig config = SmallConfig(c.H, c.KV, c.tied);
  const int64_t B = 2, T = 7;
  const double zmul = 0.05;
  Olmo3Model m(config, B, T, CpuBackend());
  RandomInit(m, 42 + c.H * 10 + c.KV);
  std::mt19937_64 rng(7);
  std::vector<int32_t> ids(B * T), labels(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    ids[i] = static_cast<int32_t>(rng() % config.vocab_size);
    labels[i] = i % 5 == 3 ? kIgnoreLabel : static_cast<int32_t>(rng() % config.vocab_size);
  }
  m.grads().Zero();
  m.ForwardBackward(ids.data(), labels.data(), B, T, 1.0, zmul);
  auto loss = [&] {
    CrossEntropySums s = m.ForwardLoss(ids.data(), labels.data(), B, T);
    return s.ce_sum + zmul * s.lse_sq_sum;
  };
  // The ratio fd/analytic is 1 + c·h² + O(h⁴) (central differences); Richardson extrapolation
  // over h and h/2 removes the h² term. h is set so the first-order change of the loss (≈ 30) is
  // 0.04: far above float32 noise (~1e-5), small enough to stay near-linear.
  std::normal_distribution<double> n01;
  const double kLossStep = 0.04;
  for (const ParamView& v : m.layout().views()) {
    float* p = m.params().data() + v.offset;
    const float* g = m.grads().data() + v.offset;
    const std::vector<float> p0(p, p + v.numel);
    // Direction: the gradient (scaled to unit RMS) plus a random part. Along a purely random
    // direction the first-order change is tiny next to float noise and curvature; the gradient
    // part makes it large, the random part still exposes errors that are not along g.
    double g_rms = 0;
    for (size_t i = 0; i < v.numel; ++i) g_rms += static_cast<double>(g[i]) * g[i];
    g_rms = std::sqrt(g_rms / v.numel);
    std::vector<double> dir(v.numel);
    for (size_t i = 0; i < v.numel; ++i) dir[i] = g[i] / g_rms + n01(rng);
    auto ratio = [&](double h) {
      std::vector<float> plus(v.numel), minus(v.numel);
      double analytic = 0;
      for (size_t i = 0; i < v.numel; ++i) {
        plus[i] = static_cast<float>(p0[i] + h * dir[i]);
        minus[i] = static_cast<float>(p0[i] - h * dir[i]);
        analytic += static_cast<double>(g[i]) * (static_cast<double>(plus[i]) - minus[i]);
      }
      std::memcpy(p, plus.data(), v.numel * 4);
      const double lp = loss();
      std::memcpy(p, minus.data(), v.numel * 4);
      const double lm = loss();
      std::memcpy(p, p0.data(), v.numel * 4);
      return (lp - lm) / analytic;
    };
    double slope = 0;
    for (size_t i = 0; i < v.numel; ++i) slope += g[i] * dir[i];
    const double h = kLossStep / std::abs(slope);
    const double r1 = ratio(h), r2 = ratio(h / 2);
    const double extrapolated = (4 * r2 - r1) / 3;
    EXPECT_NEAR(extrapolated, 1.0, 2e-3)
        << v.name << " H=" << c.H << " KV=" << c.KV << (c.tied ? " tied" : "");
  }
}

INSTANTIATE_TEST_SUITE_P(Olmo3, WholeModelFd,
                         ::testing::Values(FdCase{2, 2, false},   // MHA
                                           FdCase{4, 2, false},   // GQA
                                           FdCase{3, 1, false},   // MQA
                                           FdCase{2, 1, true}));  // tied LM head

}  // namespace
}  // namespace replica
