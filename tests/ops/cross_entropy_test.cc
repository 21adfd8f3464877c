#include "ops/cpu/cross_entropy.h"

#include <gtest/gtest.h>

#include "core/threads.h"
#include "ops/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::DirectionalFdError;
using testing::RandomVector;
using testing::RelErr;

constexpr int64_t kN = 29, kD = 24, kV = 101;

std::vector<int32_t> Labels(int64_t n, int64_t V) {
  std::vector<int32_t> y(n);
  for (int64_t i = 0; i < n; ++i) y[i] = (i % 5 == 2) ? kIgnoreLabel : static_cast<int32_t>((i * 37) % V);
  return y;
}

// Chunks of 1 row, 4 rows (uneven split of 29) and all rows give the reference's results.
TEST(LmHeadLoss, MatchesReferenceForAnyChunking) {
  auto x = RandomVector(kN * kD, 1), W = RandomVector(kV * kD, 2, 0.3f);
  auto y = Labels(kN, kV);
  const double scale = 1.0 / 23, zmul = 0.1;
  std::vector<float> dxr(kN * kD, 0.5f), dWr(kV * kD, 0.5f);
  CrossEntropySums ref =
      LmHeadLossReference(x.data(), W.data(), y.data(), kN, kD, kV, scale, zmul, dxr.data(), dWr.data());
  EXPECT_EQ(ref.tokens, 23);
  for (int64_t scratch : {kV, 4 * kV, int64_t{1} << 20}) {
    LmHeadWorkspace ws(CpuBackend(), kN, kV, scratch);
    std::vector<float> dx(kN * kD, 0.5f), dW(kV * kD, 0.5f);
    CrossEntropySums s = LmHeadLossForwardBackward(x.data(), W.data(), y.data(), kN, kD, kV, scale,
                                                   zmul, ws, dx.data(), dW.data());
    EXPECT_EQ(s.tokens, ref.tokens);
    EXPECT_NEAR(s.ce_sum, ref.ce_sum, 1e-6 * ref.ce_sum);
    EXPECT_NEAR(s.lse_sq_sum, ref.lse_sq_sum, 1e-6 * ref.lse_sq_sum);
    EXPECT_LT(RelErr(dx, dxr), 1e-6) << scratch;
    EXPECT_LT(RelErr(dW, dWr), 1e-6) << scratch;
    CrossEntropySums f = LmHeadLossForward(x.data(), W.data(), y.data(), kN, kD, kV, ws);
    EXPECT_EQ(f.ce_sum, s.ce_sum);
    EXPECT_EQ(f.lse_sq_sum, s.lse_sq_sum);
  }
}

TEST(LmHeadLoss, BackwardMatchesFiniteDifferences) {
  auto x = RandomVector(kN * kD, 3), W = RandomVector(kV * kD, 4, 0.3f);
  auto y = Labels(kN, kV);
  const double zmul = 0.05;
  LmHeadWorkspace ws(CpuBackend(), kN, kV, 7 * kV);
  std::vector<float> dx(kN * kD, 0.0f), dW(kV * kD, 0.0f);
  LmHeadLossForwardBackward(x.data(), W.data(), y.data(), kN, kD, kV, 1.0, zmul, ws, dx.data(),
                            dW.data());
  auto f = [&] {
    CrossEntropySums s = LmHeadLossForward(x.data(), W.data(), y.data(), kN, kD, kV, ws);
    return s.ce_sum + zmul * s.lse_sq_sum;
  };
  EXPECT_LT(DirectionalFdError(x, dx, f, 1e-3, 5), 1e-3);
  EXPECT_LT(DirectionalFdError(W, dW, f, 1e-3, 6), 1e-3);
}

TEST(LmHeadLoss, AllIgnoredGivesNothing) {
  auto x = RandomVector(4 * kD, 7), W = RandomVector(kV * kD, 8);
  std::vector<int32_t> y(4, kIgnoreLabel);
  LmHeadWorkspace ws(CpuBackend(), 4, kV);
  std::vector<float> dx(4 * kD, 0.0f), dW(kV * kD, 0.0f);
  CrossEntropySums s = LmHeadLossForwardBackward(x.data(), W.data(), y.data(), 4, kD, kV, 1.0, 1e-4,
                                                 ws, dx.data(), dW.data());
  EXPECT_EQ(s.tokens, 0);
  EXPECT_EQ(s.ce_sum, 0.0);
  for (float g : dx) EXPECT_EQ(g, 0.0f);
  for (float g : dW) EXPECT_EQ(g, 0.0f);
}

TEST(LmHeadLoss, BitIdenticalAcrossThreadCounts) {
  const int64_t N = 200, D = 64, V = 1000;
  auto x = RandomVector(N * D, 9), W = RandomVector(V * D, 10, 0.2f);
  auto y = Labels(N, V);
  std::vector<float> dx[2], dW[2];
  double ce[2];
  for (int t = 0; t < 2; ++t) {
    SetNumThreads(t + 1);
    LmHeadWorkspace ws(CpuBackend(), N, V, 64 * V);
    dx[t].assign(N * D, 0.0f);
    dW[t].assign(V * D, 0.0f);
    ce[t] = LmHeadLossForwardBackward(x.data(), W.data(), y.data(), N, D, V, 0.01, 1e-4, ws,
                                      dx[t].data(), dW[t].data())
                .ce_sum;
  }
  SetNumThreads(0);
  EXPECT_EQ(ce[0], ce[1]);
  EXPECT_TRUE(BitEqual(dx[0], dx[1]));
  EXPECT_TRUE(BitEqual(dW[0], dW[1]));
}

}  // namespace
}  // namespace replica
