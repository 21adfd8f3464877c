// bf16 weight copies (ops/cpu/bf16_weights.h): the vectorised conversion against core/half.h,
// one conversion per weight inside a scope, none outside, and every way a copy goes stale (the
// optimizer's update through the backend, a noted write, the scope closing), checked through the
// GEMM and the bf16 backend's linear layer: a changed weight never meets its old copy, and a hit
// gives the bits of a fresh conversion.
#include "ops/cpu/bf16_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include "core/half.h"
#include "op_test_util.h"
#include "ops/adamw_coefficients.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/registry.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::RandomVector;

TEST(Bf16Weights, ConversionMatchesStorageConversion) {
  auto x = RandomVector(5000, 7, 30.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            1.0f + 0x1p-8f,
                            1.0f + 3 * 0x1p-8f};
  x.insert(x.end(), std::begin(specials), std::end(specials));
  const int64_t cols = static_cast<int64_t>(x.size());
  std::vector<uint16_t> bits(x.size());
  ConvertToBf16(x.data(), cols, bits.data(), cols, 1, cols);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(bits[i], F32ToBf16(x[i])) << x[i];
}

TEST(Bf16Weights, NoCopyOutsideAScope) {
  auto W = RandomVector(64 * 32, 1);
  EXPECT_FALSE(Bf16WeightScopeOpen());
  EXPECT_EQ(Bf16WeightCopy(W.data(), 32, 64, 32), nullptr);
}

TEST(Bf16Weights, OneConversionPerScopeUntilStale) {
  const int64_t rows = 48, cols = 40, ld = 44;
  auto W = RandomVector(rows * ld, 2);
  auto expect_bits = [&](const uint16_t* copy) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        ASSERT_EQ(copy[r * cols + c], F32ToBf16(W[r * ld + c])) << r << "," << c;
  };
  const Bf16WeightScope scope;
  EXPECT_TRUE(Bf16WeightScopeOpen());
  const int64_t n0 = Bf16WeightConversions();
  expect_bits(Bf16WeightCopy(W.data(), ld, rows, cols));
  expect_bits(Bf16WeightCopy(W.data(), ld, rows, cols));
  EXPECT_EQ(Bf16WeightConversions(), n0 + 1);

  W[5 * ld + 3] += 1.0f;  // the optimizer's update says so
  NoteWeightsUpdated();
  expect_bits(Bf16WeightCopy(W.data(), ld, rows, cols));
  EXPECT_EQ(Bf16WeightConversions(), n0 + 2);

  W[7 * ld + 1] -= 2.0f;  // a write into the weight's range (a ZeRO-3 gather)
  NoteWeightsWritten(W.data() + 7 * ld + 1, sizeof(float));
  expect_bits(Bf16WeightCopy(W.data(), ld, rows, cols));
  EXPECT_EQ(Bf16WeightConversions(), n0 + 3);

  // A write elsewhere, or in the padding after the last row's columns, leaves the copy valid.
  const std::vector<float> elsewhere(8);
  NoteWeightsWritten(W.data() + (rows - 1) * ld + cols, sizeof(float) * (ld - cols));
  NoteWeightsWritten(elsewhere.data(), elsewhere.size() * sizeof(float));
  EXPECT_EQ(Bf16WeightConversions(), n0 + 3);
  expect_bits(Bf16WeightCopy(W.data(), ld, rows, cols));
  EXPECT_EQ(Bf16WeightConversions(), n0 + 3);
}

TEST(Bf16Weights, CopiesDoNotOutliveTheirScope) {
  auto W = RandomVector(32 * 32, 3);
  {
    const Bf16WeightScope scope;
    Bf16WeightCopy(W.data(), 32, 32, 32);
  }
  W[0] = 123.0f;  // between steps, with no note (a checkpoint restore)
  const Bf16WeightScope scope;
  EXPECT_EQ(Bf16WeightCopy(W.data(), 32, 32, 32)[0], F32ToBf16(123.0f));
}

TEST(Bf16Weights, ScopesArePerThread) {
  auto W = RandomVector(32 * 32, 4);
  const Bf16WeightScope scope;
  Bf16WeightCopy(W.data(), 32, 32, 32);
  std::thread([&] {
    EXPECT_FALSE(Bf16WeightScopeOpen());
    EXPECT_EQ(Bf16WeightCopy(W.data(), 32, 32, 32), nullptr);
    W[1] = -5.0f;
    const Bf16WeightScope other;
    EXPECT_EQ(Bf16WeightCopy(W.data(), 32, 32, 32)[1], F32ToBf16(-5.0f));
  }).join();
}

// The GEMM on a weight operand: inside a scope the same bits as outside, and after the optimizer
// changed the weight, the bits of the changed weight (never the stale copy).
TEST(Bf16Weights, GemmWeightOperandNeverStale) {
  if (!OneDnnBf16MatmulAvailable()) GTEST_SKIP() << "no oneDNN bf16 matmul on this CPU";
  const int64_t M = 96, N = 80, K = 72;
  auto A = RandomVector(M * K, 5), W = RandomVector(N * K, 6);
  auto gemm = [&](GemmB kind) {
    std::vector<float> C(M * N);
    GemmBf16OneDnn(true, false, true, M, N, K, 1.0f, A.data(), K, W.data(), K, 0.0f, C.data(), N,
                   kind);
    return C;
  };
  const std::vector<float> fresh = gemm(GemmB::kActivation);
  const Bf16WeightScope scope;
  EXPECT_TRUE(BitEqual(gemm(GemmB::kWeight), fresh));
  EXPECT_TRUE(BitEqual(gemm(GemmB::kWeight), fresh));
  for (float& w : W) w *= 1.5f;
  NoteWeightsUpdated();
  const std::vector<float> changed = gemm(GemmB::kWeight);
  EXPECT_FALSE(BitEqual(changed, fresh));
  EXPECT_TRUE(BitEqual(changed, gemm(GemmB::kActivation)));
}

// Through the bf16 backend: linear forward, AdamW on the weight, linear forward again, all inside
// one scope, equals the same with no scope (every operand converted on the call).
TEST(Bf16Weights, BackendAdamWInvalidatesLinearWeights) {
  const Backend& bf16 = SelectBackend("cpu", Precision::kBf16);
  const int64_t N = 64, in = 96, out = 80;
  const auto x = RandomVector(N * in, 7), g = RandomVector(out * in, 8);
  const AdamWCoefficients c{1.0, 0.99, 0.9, 0.95, 0.05, 0.1, 1e-8};
  auto run = [&](bool scoped) {
    auto W = RandomVector(out * in, 9);
    std::vector<float> m(W.size()), v(W.size()), y0(N * out), y1(N * out);
    std::optional<Bf16WeightScope> scope;
    if (scoped) scope.emplace();
    bf16.LinearForward(x.data(), W.data(), N, in, out, y0.data());
    bf16.AdamWUpdate(W.data(), g.data(), m.data(), v.data(), static_cast<int64_t>(W.size()), c);
    bf16.LinearForward(x.data(), W.data(), N, in, out, y1.data());
    EXPECT_FALSE(BitEqual(y0, y1));
    return std::pair{y0, y1};
  };
  const auto plain = run(false), scoped = run(true);
  EXPECT_TRUE(BitEqual(plain.first, scoped.first));
  EXPECT_TRUE(BitEqual(plain.second, scoped.second));
}

}  // namespace
}  // namespace replica
