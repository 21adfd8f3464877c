#include "ops/cpu/linear.h"

#include <gtest/gtest.h>

#include "core/threads.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::RandomVector;
using testing::RelErr;

constexpr int64_t kN = 45, kIn = 70, kOut = 33;

TEST(Linear, ForwardAndBackwardMatchReference) {
  auto x = RandomVector(kN * kIn, 1), W = RandomVector(kOut * kIn, 2, 0.1f);
  auto dy = RandomVector(kN * kOut, 3);
  std::vector<float> y(kN * kOut), yr(kN * kOut);
  LinearForward(x.data(), W.data(), kN, kIn, kOut, y.data());
  LinearForwardReference(x.data(), W.data(), kN, kIn, kOut, yr.data());
  EXPECT_LT(RelErr(y, yr), 1e-6);
  // Backward accumulates on top of existing values.
  auto dx0 = RandomVector(kN * kIn, 4), dW0 = RandomVector(kOut * kIn, 5);
  std::vector<float> dx = dx0, dW = dW0, dxr = dx0, dWr = dW0;
  LinearBackward(x.data(), W.data(), dy.data(), kN, kIn, kOut, dx.data(), dW.data());
  LinearBackwardReference(x.data(), W.data(), dy.data(), kN, kIn, kOut, dxr.data(), dWr.data());
  EXPECT_LT(RelErr(dx, dxr), 1e-6);
  EXPECT_LT(RelErr(dW, dWr), 1e-6);
  // dx may be skipped.
  std::vector<float> dW2 = dW0;
  LinearBackward(x.data(), W.data(), dy.data(), kN, kIn, kOut, nullptr, dW2.data());
  EXPECT_TRUE(BitEqual(dW2, dW));
}

TEST(Linear, BitIdenticalAcrossThreadCounts) {
  const int64_t N = 300, in = 256, out = 384;
  auto x = RandomVector(N * in, 6), W = RandomVector(out * in, 7), dy = RandomVector(N * out, 8);
  std::vector<float> y[2], dx[2], dW[2];
  for (int t = 0; t < 2; ++t) {
    SetNumThreads(t + 1);
    y[t].resize(N * out);
    dx[t].assign(N * in, 0.0f);
    dW[t].assign(out * in, 0.0f);
    LinearForward(x.data(), W.data(), N, in, out, y[t].data());
    LinearBackward(x.data(), W.data(), dy.data(), N, in, out, dx[t].data(), dW[t].data());
  }
  SetNumThreads(0);
  EXPECT_TRUE(BitEqual(y[0], y[1]));
  EXPECT_TRUE(BitEqual(dx[0], dx[1]));
  EXPECT_TRUE(BitEqual(dW[0], dW[1]));
}

}  // namespace
}  // namespace replica
