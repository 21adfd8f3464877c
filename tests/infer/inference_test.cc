// Inference over memory-mapped weights against the training forward and the float64 fixtures
// (tests/data/olmo3, README there): the layer-by-layer forward on bf16-stored weights equals
// Olmo3Model on the same weights; cached decoding (prefill + steps, ring-buffered sliding layers)
// gives the full forward's next-token logits across window boundaries; greedy next tokens equal
// the float64 reference's argmax wherever its top-2 gap is above fp32 noise; bad input is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <array>
#include <random>

#include "core/error.h"
#include "ops/cpu/cpu_backend.h"
#include "core/half.h"
#include "hf/hf_weights.h"
#include "infer/decoder.h"
#include "infer/generate.h"
#include "infer/inference_model.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/attention_decode.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/matvec.h"
#include "ops/op_test_util.h"
#include "ops/registry.h"
#include "infer/model_weights.h"
#include "infer/sampler.h"
#include "io/safetensors.h"
#include "model/olmo3.h"
#include "testing/util.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
const std::string kData = std::string(REPLICA_TEST_DATA) + "/olmo3/";

struct Fixture {
  int64_t B, T, V;
  std::vector<int32_t> ids;
  std::vector<float> logits;  // float64 reference, rounded to F32
};

Fixture ReadIo(const std::string& c) {
  SafetensorsFile f = SafetensorsFile::Open(kData + c + "/io.safetensors");
  Fixture x;
  const TensorInfo& l = f.Get("logits");
  x.B = l.shape[0], x.T = l.shape[1], x.V = l.shape[2];
  for (int64_t id : f.ReadI64("input_ids")) x.ids.push_back(static_cast<int32_t>(id));
  x.logits = f.ReadF32("logits");
  return x;
}

// The case's weights rounded to bf16, saved as a sharded BF16 directory; `rounded` receives the
// same weights in fp32 (exactly representable) for the training model.
std::string Bf16Copy(const std::string& c, const test::TempDir& tmp, FlatBuffer* rounded,
                     ModelConfig* config) {
  *config = ModelConfig::FromHfFile(kData + c + "/config.json");
  const ParamLayout layout = config->BuildLayout();
  *rounded = FlatBuffer(layout.total_floats());
  LoadHfWeights(kData + c, layout, *rounded);
  for (size_t i = 0; i < rounded->size(); ++i) {
    rounded->data()[i] = Bf16ToF32(F32ToBf16(rounded->data()[i]));
  }
  const std::string dir = tmp.File(c + "_bf16");
  SaveHfModel(dir, *config, layout, *rounded, DType::kBF16, /*max_shard_bytes=*/200'000);
  return dir;
}

TEST(MatVec, EqualsItsReferenceBitForBit) {
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.f, 1.f);
  for (int64_t cols : {1, 31, 32, 33, 100, 257}) {
    const int64_t rows = 37;
    std::vector<float> w(rows * cols), x(cols), y(rows), y_ref(rows);
    std::vector<uint16_t> wb(rows * cols);
    for (auto& v : w) v = n(rng);
    for (auto& v : x) v = n(rng);
    for (size_t i = 0; i < w.size(); ++i) wb[i] = F32ToBf16(w[i]);
    MatVec(DType::kF32, w.data(), x.data(), rows, cols, y.data());
    MatVecReference(DType::kF32, w.data(), x.data(), rows, cols, y_ref.data());
    EXPECT_EQ(y, y_ref) << "f32 cols " << cols;
    MatVec(DType::kBF16, wb.data(), x.data(), rows, cols, y.data());
    MatVecReference(DType::kBF16, wb.data(), x.data(), rows, cols, y_ref.data());
    EXPECT_EQ(y, y_ref) << "bf16 cols " << cols;
    for (int64_t r = 0; r < rows; ++r) {  // and it is the product
      double s = 0;
      for (int64_t k = 0; k < cols; ++k) s += static_cast<double>(Bf16ToF32(wb[r * cols + k])) * x[k];
      EXPECT_NEAR(y[r], s, 1e-5 * (1 + std::abs(s)));
    }
  }
  std::vector<float> x(4), y(1);
  std::vector<uint16_t> w(4);
  EXPECT_THROW(MatVec(DType::kF16, w.data(), x.data(), 1, 4, y.data()), Error);
}

// The bf16 step: x and the weights rounded to bf16, then the fp32 step's sums — so it equals the
// fp32 MatVec on rounded operands bit for bit, and its scalar reference, for both storage dtypes.
TEST(MatVec, Bf16RoundsBothOperandsThenSumsAsFp32) {
  std::mt19937 rng(2);
  std::normal_distribution<float> n(0.f, 1.f);
  for (int64_t cols : {1, 31, 32, 33, 100, 257}) {
    const int64_t rows = 37;
    std::vector<float> w(rows * cols), x(cols), wr(rows * cols), xr(cols), y(rows), y_ref(rows),
        y_rounded(rows);
    std::vector<uint16_t> wb(rows * cols);
    for (auto& v : w) v = n(rng);
    for (auto& v : x) v = n(rng);
    for (size_t i = 0; i < w.size(); ++i) wb[i] = F32ToBf16(w[i]), wr[i] = RoundToBf16(w[i]);
    for (int64_t k = 0; k < cols; ++k) xr[k] = RoundToBf16(x[k]);
    MatVec(DType::kF32, wr.data(), xr.data(), rows, cols, y_rounded.data());
    MatVec(DType::kF32, w.data(), x.data(), rows, cols, y.data(), Precision::kBf16);
    MatVecReference(DType::kF32, w.data(), x.data(), rows, cols, y_ref.data(), Precision::kBf16);
    EXPECT_EQ(y, y_rounded) << "f32 weights, cols " << cols;
    EXPECT_EQ(y, y_ref) << "f32 weights, cols " << cols;
    MatVec(DType::kBF16, wb.data(), x.data(), rows, cols, y.data(), Precision::kBf16);
    MatVecReference(DType::kBF16, wb.data(), x.data(), rows, cols, y_ref.data(), Precision::kBf16);
    EXPECT_EQ(y, y_rounded) << "bf16 weights, cols " << cols;
    EXPECT_EQ(y, y_ref) << "bf16 weights, cols " << cols;
  }
}

// The bf16 decode step's attention is the bf16 reference forward's last row (operands and
// exp(s - row max) rounded to bf16), up to the order of the fp32 sums.
TEST(AttentionDecode, Bf16IsTheBf16ReferenceForwardsLastRow) {
  for (auto [T, H, KV, hd, window] : std::vector<std::array<int64_t, 5>>{
           {1, 1, 1, 2, 0}, {9, 4, 2, 8, 0}, {17, 4, 1, 16, 5}, {40, 6, 3, 8, 0}}) {
    const AttentionShape a{1, T, H, KV, hd, window};
    const int64_t KVd = KV * hd;
    const std::vector<float> q = testing::RandomVector(T * H * hd, 11), k = testing::RandomVector(T * KVd, 12),
                             v = testing::RandomVector(T * KVd, 13);
    std::vector<float> o(T * H * hd), lse(H * T), out(H * hd), out32(H * hd), sc(H * T);
    AttentionForwardReference(a, q.data(), k.data(), v.data(), o.data(), lse.data(),
                              Precision::kBf16);
    const DecodeAttentionShape d{H, KV, hd, window, T, T - 1};
    AttentionDecode(d, q.data() + (T - 1) * H * hd, k.data(), v.data(), out.data(), sc.data(),
                    Precision::kBf16);
    AttentionDecode(d, q.data() + (T - 1) * H * hd, k.data(), v.data(), out32.data(), sc.data());
    double worst = 0, from_fp32 = 0;
    for (int64_t i = 0; i < H * hd; ++i) {
      worst = std::max<double>(worst, std::abs(out[i] - o[(T - 1) * H * hd + i]));
      from_fp32 = std::max<double>(from_fp32, std::abs(out[i] - out32[i]));
    }
    EXPECT_LT(worst, 2e-6) << "T " << T;
    if (T > 1) EXPECT_GT(from_fp32, 1e-4) << "T " << T << ": the bf16 step must round";
  }
}

// bf16-stored, memory-mapped, layer by layer == Olmo3Model on the same fp32 weights.
TEST(InferenceModel, Bf16WeightsGiveTheTrainingForwardBitForBit) {
  for (const std::string c : {"tiny-mha", "tiny-gqa", "tiny-yarn"}) {
    FlatBuffer rounded;
    ModelConfig config;
    test::TempDir tmp("infer");
    const std::string dir = Bf16Copy(c, tmp, &rounded, &config);
    ASSERT_TRUE(fs::exists(dir + "/model.safetensors.index.json")) << "expected a sharded copy";
    const Fixture io = ReadIo(c);
    Olmo3Model train(config, io.B, io.T, CpuBackend());
    std::copy(rounded.data(), rounded.data() + rounded.size(), train.params().data());
    const int64_t N = io.B * io.T, V = io.V;
    std::vector<float> want(N * V), got(N * V);
    train.ForwardLogits(io.ids.data(), io.B, io.T, want.data());

    InferenceModel m(ModelWeights::Open(dir), CpuBackend());
    EXPECT_EQ(m.weights().Get("model.embed_tokens.weight").dtype, DType::kBF16);
    m.ForwardLogits(io.ids.data(), io.B, io.T, got.data());
    EXPECT_EQ(got, want) << c;

    std::vector<int32_t> labels(N);
    for (int64_t i = 0; i < N; ++i) labels[i] = i % io.T == io.T - 1 ? kIgnoreLabel : io.ids[i + 1];
    const CrossEntropySums a = train.ForwardLoss(io.ids.data(), labels.data(), io.B, io.T);
    const CrossEntropySums b = m.ForwardLoss(io.ids.data(), labels.data(), io.B, io.T);
    EXPECT_EQ(a.ce_sum, b.ce_sum) << c;
    EXPECT_EQ(a.lse_sq_sum, b.lse_sq_sum) << c;
    EXPECT_EQ(a.tokens, b.tokens) << c;

    // Logits made a few rows at a time: the same numbers up to GEMM edge rounding.
    std::vector<float> xf(N * config.hidden_size);
    m.ForwardHidden(io.ids.data(), io.B, io.T, xf.data());
    int64_t seen = 0;
    m.ForEachLogitsChunk(xf.data(), N, 7, [&](int64_t r0, int64_t rows, const float* l) {
      EXPECT_EQ(r0, seen);
      for (int64_t i = 0; i < rows * V; ++i) ASSERT_NEAR(l[i], want[r0 * V + i], 1e-5) << c;
      seen += rows;
    });
    EXPECT_EQ(seen, N);
  }
}

// Largest |Δ| between the decoder's logits at every position of row b and the full forward's,
// relative to the largest |logit|.
// The MLP in passes of a few rows (what long-context evaluation does to hold one pass of g, u, s):
// the one-pass logits up to the rounding of GEMMs over fewer rows (a GEMM kernel may order a
// short block's sums otherwise; measured 1.0e-6 of the largest logit on tiny-gqa, AVX2 kernels).
TEST(InferenceModel, MlpPassesGiveTheOnePassLogits) {
  for (const std::string c : {"tiny-mha", "tiny-gqa", "tiny-yarn"}) {
    const Fixture io = ReadIo(c);
    InferenceModel m(ModelWeights::Open(kData + c), CpuBackend());
    const int64_t N = io.B * io.T, V = io.V;
    ASSERT_LE(N, m.mlp_rows()) << "the fixture must run in one pass by default";
    std::vector<float> one(N * V), passes(N * V);
    m.ForwardLogits(io.ids.data(), io.B, io.T, one.data());
    m.set_mlp_rows(7);  // not a divisor of N: a short last pass
    m.ForwardLogits(io.ids.data(), io.B, io.T, passes.data());
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < N * V; ++i) {
      worst = std::max<double>(worst, std::abs(passes[i] - one[i]));
      scale = std::max<double>(scale, std::abs(one[i]));
    }
    EXPECT_LT(worst, 1e-5 * scale) << c << ": " << worst << " of " << scale;
    EXPECT_THROW(m.set_mlp_rows(0), Error);
  }
}

double DecodeVsFullForward(InferenceModel& m, const std::vector<int32_t>& seq, int64_t prompt_len) {
  const int64_t T = static_cast<int64_t>(seq.size()), V = m.config().vocab_size;
  std::vector<float> full(T * V);
  m.ForwardLogits(seq.data(), 1, T, full.data());
  Decoder dec(m, T);
  std::span<const float> l = dec.Prefill({seq.data(), static_cast<size_t>(prompt_len)});
  double worst = 0, scale = 0;
  for (float v : full) scale = std::max<double>(scale, std::abs(v));
  for (int64_t p = prompt_len - 1; p < T; ++p) {
    if (p > prompt_len - 1) l = dec.Step(seq[p]);
    EXPECT_EQ(dec.length(), p + 1);
    for (int64_t v = 0; v < V; ++v) worst = std::max<double>(worst, std::abs(l[v] - full[p * V + v]));
  }
  return worst / scale;
}

TEST(Decoder, CachedStepsGiveTheFullForwardsLogitsAcrossTheWindow) {
  // tiny-mha: W 16, T 48; tiny-gqa: W 7, T 40 (KV 2: GQA); tiny-yarn: W 12, T 96, YaRN on the full
  // layers with original context 32 (decoding runs past it); bf16-stored and fp32-stored weights.
  for (const std::string c : {"tiny-mha", "tiny-gqa", "tiny-yarn"}) {
    const Fixture io = ReadIo(c);
    FlatBuffer rounded;
    ModelConfig config;
    test::TempDir tmp("infer");
    for (const std::string& dir : {kData + c, Bf16Copy(c, tmp, &rounded, &config)}) {
      InferenceModel m(ModelWeights::Open(dir), CpuBackend());
      const int64_t W = m.config().sliding_window;
      ASSERT_GT(io.T, 2 * W) << "the sequence must cross the window";
      for (int64_t b = 0; b < io.B; ++b) {
        std::vector<int32_t> seq(io.ids.begin() + b * io.T, io.ids.begin() + (b + 1) * io.T);
        // A prompt shorter than the window, one just past it and one filling most of the context.
        for (int64_t prompt : {int64_t{1}, W + 1, io.T - 3}) {
          const double rel = DecodeVsFullForward(m, seq, prompt);
          EXPECT_LT(rel, 2e-6) << dir << " row " << b << " prompt " << prompt;
        }
      }
    }
  }
}

// Root mean square of (decoded logits − `want`) over every position of `seq`, decoding on `m`
// from a one-token prompt.
double DecodeRms(InferenceModel& m, const std::vector<int32_t>& seq, const std::vector<float>& want) {
  const int64_t T = static_cast<int64_t>(seq.size()), V = m.config().vocab_size;
  Decoder dec(m, T);
  std::span<const float> l = dec.Prefill({seq.data(), 1});
  double sq = 0;
  for (int64_t p = 0; p < T; ++p) {
    if (p > 0) l = dec.Step(seq[p]);
    for (int64_t v = 0; v < V; ++v) sq += (l[v] - want[p * V + v]) * double(l[v] - want[p * V + v]);
  }
  return std::sqrt(sq / static_cast<double>(T * V));
}

// The bf16 backend decodes in bf16 (MatVec and AttentionDecode round their operands as its
// LinearForward and AttentionForward do; their tests above hold them to the bf16 references). A
// step's logits are then its own full forward's up to the order of fp32 sums, until that order
// moves a value across a bf16 rounding boundary somewhere (one element rounded a bf16 ulp the
// other way; in the key/value cache it stays): from there the decode is another bf16 sample. So
// the bf16 decode is held to be much nearer the bf16 forward than the fp32 decode is (whose
// distance is the whole bf16-vs-fp32 difference). Measured on these fixtures (AVX2, the emulated
// bf16 route; OpenBLAS Haswell and Prescott kernels): RMS of bf16 decode − bf16 forward 0.018
// to 0.43 of the bf16 − fp32 forwards' RMS; the fp32 decode's 1.00. The bound, 0.7, leaves room
// for other GEMM kernels' flips.
TEST(Decoder, Bf16StepsFollowTheBf16Forward) {
  const Backend& bf16 = SelectBackend("cpu", Precision::kBf16);
  for (const std::string c : {"tiny-mha", "tiny-gqa", "tiny-yarn"}) {
    const Fixture io = ReadIo(c);
    InferenceModel m16(ModelWeights::Open(kData + c), bf16);
    InferenceModel m32(ModelWeights::Open(kData + c), CpuBackend());
    const int64_t T = io.T, V = io.V;
    for (int64_t b = 0; b < io.B; ++b) {
      const std::vector<int32_t> seq(io.ids.begin() + b * T, io.ids.begin() + (b + 1) * T);
      std::vector<float> full16(T * V), full32(T * V);
      m16.ForwardLogits(seq.data(), 1, T, full16.data());
      m32.ForwardLogits(seq.data(), 1, T, full32.data());
      double cross = 0;
      for (int64_t i = 0; i < T * V; ++i) cross += (full16[i] - full32[i]) * double(full16[i] - full32[i]);
      cross = std::sqrt(cross / static_cast<double>(T * V));
      const double r16 = DecodeRms(m16, seq, full16) / cross;
      const double r32 = DecodeRms(m32, seq, full16) / cross;
      std::printf("%s row %lld: decode - bf16 forward, RMS / (bf16 - fp32 forward) RMS: bf16 "
                  "decode %.3g, fp32 decode %.3g\n", c.c_str(), static_cast<long long>(b), r16, r32);
      EXPECT_LT(r16, 0.7) << c << " row " << b;
      EXPECT_GT(r32, 0.9) << c << " row " << b;
    }
  }
}

TEST(Decoder, GreedyNextTokensEqualTheFloat64ReferenceArgmax) {
  for (const std::string c : {"tiny-mha", "tiny-gqa", "tiny-yarn"}) {
    const Fixture io = ReadIo(c);
    InferenceModel m(ModelWeights::Open(kData + c), CpuBackend());
    // fp32 noise of these logits (README: fp32_reference_deviation.logits_max_abs ~1e-6); a top-2
    // gap 20 times larger decides the argmax.
    const double noise = 2e-5;
    int64_t checked = 0, skipped = 0;
    for (int64_t b = 0; b < io.B; ++b) {
      const int32_t* seq = io.ids.data() + b * io.T;
      Decoder dec(m, io.T);
      std::span<const float> l = dec.Prefill({seq, 1});
      for (int64_t p = 0; p < io.T; ++p) {
        if (p > 0) l = dec.Step(seq[p]);
        const float* ref = io.logits.data() + (b * io.T + p) * io.V;
        std::vector<float> sorted(ref, ref + io.V);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        if (sorted[0] - sorted[1] <= noise) {
          ++skipped;
          continue;
        }
        EXPECT_EQ(ArgMax(l), ArgMax({ref, static_cast<size_t>(io.V)})) << c << " [" << b << "," << p << "]";
        ++checked;
      }
      // The greedy continuation from a prefill: Generate's first token is the prefix's argmax.
      for (int64_t p : {int64_t{5}, io.T / 2, io.T - 1}) {
        const float* ref = io.logits.data() + (b * io.T + p - 1) * io.V;
        Decoder d2(m, io.T);
        GenerateOptions o;
        o.max_new_tokens = 1;
        const GenerateResult r = Generate(d2, {seq, static_cast<size_t>(p)}, o);
        std::vector<float> sorted(ref, ref + io.V);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        if (sorted[0] - sorted[1] > noise) {
          ASSERT_EQ(r.tokens.size(), 1u);
          EXPECT_EQ(r.tokens[0], ArgMax({ref, static_cast<size_t>(io.V)}));
        }
      }
    }
    EXPECT_GT(checked, 9 * (checked + skipped) / 10) << c << ": too few positions decided";
  }
}

TEST(Decoder, WeightsCopiedToMemoryGiveTheSameLogitsAsTheMapping) {
  for (const std::string c : {"tiny-gqa", "tiny-yarn"}) {
    const Fixture io = ReadIo(c);
    FlatBuffer rounded;
    ModelConfig config;
    test::TempDir tmp("infer");
    for (const std::string& dir : {kData + c, Bf16Copy(c, tmp, &rounded, &config)}) {
      InferenceModel mapped(ModelWeights::Open(dir), CpuBackend()), copied(ModelWeights::Open(dir), CpuBackend());
      Decoder a(mapped, io.T, Decoder::Weights::kMapped), b(copied, io.T, Decoder::Weights::kCopied);
      EXPECT_EQ(b.weights(), Decoder::Weights::kCopied);
      // Every matrix a step reads now lives in the copy, with the same bytes; the rest is mapped.
      for (const std::string& n : Decoder::StepMatrixNames(copied.config())) {
        const TensorInfo& m = mapped.weights().Get(n);
        const TensorInfo& k = copied.weights().Get(n);
        EXPECT_NE(m.data, k.data) << n;
        ASSERT_EQ(m.nbytes, k.nbytes) << n;
        EXPECT_EQ(std::memcmp(m.data, k.data, m.nbytes), 0) << n;
      }
      EXPECT_EQ(copied.mutable_weights().CopyToMemory(Decoder::StepMatrixNames(copied.config())), 0u)
          << "copied twice";
      const int32_t* seq = io.ids.data();
      std::span<const float> la = a.Prefill({seq, 3}), lb = b.Prefill({seq, 3});
      EXPECT_TRUE(std::equal(la.begin(), la.end(), lb.begin())) << dir << " prefill";
      for (int64_t p = 3; p < io.T; ++p) {
        la = a.Step(seq[p]);
        lb = b.Step(seq[p]);
        ASSERT_TRUE(std::equal(la.begin(), la.end(), lb.begin())) << dir << " position " << p;
      }
      // The prefill of a copied model widens the copy: the full forward is unchanged too.
      std::vector<float> fa(io.T * io.V), fb(io.T * io.V);
      mapped.ForwardLogits(seq, 1, io.T, fa.data());
      copied.ForwardLogits(seq, 1, io.T, fb.data());
      EXPECT_EQ(fa, fb) << dir;
    }
  }
}

TEST(Decoder, RefusesWhatDoesNotFit) {
  InferenceModel m(ModelWeights::Open(kData + "tiny-mha"), CpuBackend());
  Decoder dec(m, 8);
  std::vector<int32_t> prompt(9, 3);
  try {
    dec.Prefill(prompt);
    FAIL() << "a 9-token prompt in an 8-position context";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("9 tokens"), std::string::npos) << e.what();
  }
  prompt.resize(8);
  dec.Prefill(prompt);
  EXPECT_THROW(dec.Step(1), Error);  // full
  EXPECT_THROW(Decoder(m, 10'000), Error);  // beyond max_position_embeddings (256)
  Decoder d2(m, 16);
  GenerateOptions o;
  o.max_new_tokens = 10;
  EXPECT_THROW(Generate(d2, prompt, o), Error);  // 8 + 10 > 16
}

TEST(ModelWeights, AMissingShardIsAnErrorNamingIt) {
  FlatBuffer rounded;
  ModelConfig config;
  test::TempDir tmp("infer");
  const std::string dir = Bf16Copy("tiny-gqa", tmp, &rounded, &config);
  std::string victim;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find("-of-") != std::string::npos) victim = e.path().filename();
  }
  ASSERT_FALSE(victim.empty());
  fs::remove(fs::path(dir) / victim);
  try {
    ModelWeights::Open(dir);
    FAIL() << "opened a directory missing " << victim;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(victim), std::string::npos) << e.what();
  }
}

TEST(Sampler, GreedyTopKTopPAndSeeds) {
  const std::vector<float> logits = {0.1f, 2.0f, 1.9f, -1.0f, 2.0f, 0.5f};
  EXPECT_EQ(ArgMax(logits), 1);  // ties go to the smaller id
  EXPECT_EQ(Sampler({}).Next(logits), 1);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    EXPECT_EQ(Sampler({5.0, 1, 1.0, seed}).Next(logits), 1) << "top-k 1 is greedy";
    EXPECT_EQ(Sampler({5.0, 0, 1e-9, seed}).Next(logits), 1) << "a tiny top-p is greedy";
    const int32_t t = Sampler({1.0, 3, 1.0, seed}).Next(logits);
    EXPECT_TRUE(t == 1 || t == 4 || t == 2) << "top-k 3 keeps ids 1, 4, 2; got " << t;
  }
  // The same seed gives the same draws; frequencies follow softmax(logits / T).
  Sampler a({0.7, 0, 1.0, 42}), b({0.7, 0, 1.0, 42});
  std::vector<int64_t> count(logits.size());
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    const int32_t x = a.Next(logits);
    ASSERT_EQ(x, b.Next(logits));
    ++count[x];
  }
  double z = 0;
  for (float l : logits) z += std::exp(l / 0.7);
  for (size_t i = 0; i < logits.size(); ++i) {
    const double p = std::exp(logits[i] / 0.7) / z;
    EXPECT_NEAR(static_cast<double>(count[i]) / n, p, 5 * std::sqrt(p * (1 - p) / n) + 1e-3) << i;
  }
  EXPECT_THROW(Sampler({-1.0, 0, 1.0, 0}), Error);
  EXPECT_THROW(Sampler({1.0, -2, 1.0, 0}), Error);
  EXPECT_THROW(Sampler({1.0, 0, 0.0, 0}), Error);
}

}  // namespace
}  // namespace replica
