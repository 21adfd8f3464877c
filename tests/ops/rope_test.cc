#include "ops/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::Dot;
using testing::RandomVector;
using testing::RelErr;

constexpr int64_t kB = 2, kT = 33, kH = 3, kHd = 16;

TEST(Rope, TableHoldsRoundedDoubleAngles) {
  RopeTable t = MakeRopeTable(100, kHd, 500000.0);
  ASSERT_EQ(t.cos.size(), size_t{100 * kHd / 2});
  // Position 0 is the identity.
  for (int64_t j = 0; j < kHd / 2; ++j) {
    EXPECT_EQ(t.cos[j], 1.0f);
    EXPECT_EQ(t.sin[j], 0.0f);
  }
  // φ(t, j) = t · θ^(−2j/hd), evaluated in double.
  const double phi = 77.0 * std::pow(500000.0, -2.0 * 3 / kHd);
  EXPECT_EQ(t.cos[77 * kHd / 2 + 3], static_cast<float>(std::cos(phi)));
  EXPECT_EQ(t.sin[77 * kHd / 2 + 3], static_cast<float>(std::sin(phi)));
  EXPECT_THROW(MakeRopeTable(10, 15, 1e4), Error);
}

TEST(Rope, RotateHalfPairsJWithJPlusHalf) {
  // One head, position 1, theta such that inv_freq[0] = 1: dimension 0 rotates with hd/2 by 1 rad.
  RopeTable t = MakeRopeTable(2, 4, 10000.0);
  std::vector<float> x = {0, 0, 0, 0, 1, 0, 0, 0}, y(8);  // rows t=0 and t=1
  RopeForward(t, x.data(), 1, 2, 1, y.data());
  EXPECT_FLOAT_EQ(y[4], static_cast<float>(std::cos(1.0)));
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_FLOAT_EQ(y[6], static_cast<float>(std::sin(1.0)));  // paired with j + hd/2 = 2
  EXPECT_EQ(y[7], 0.0f);
}

TEST(Rope, ForwardAndBackwardMatchReference) {
  const double theta = 10000.0;
  RopeTable t = MakeRopeTable(kT, kHd, theta);
  auto x = RandomVector(kB * kT * kH * kHd, 1);
  std::vector<float> y(x.size()), yr(x.size());
  RopeForward(t, x.data(), kB, kT, kH, y.data());
  RopeForwardReference(kHd, theta, x.data(), kB, kT, kH, yr.data());
  EXPECT_LT(RelErr(y, yr), 2e-7);
  std::vector<float> dx(x.size(), 1.0f), dxr(x.size(), 1.0f);
  RopeBackward(t, x.data(), kB, kT, kH, dx.data());
  RopeBackwardReference(kHd, theta, x.data(), kB, kT, kH, dxr.data());
  EXPECT_LT(RelErr(dx, dxr), 2e-7);
}

TEST(Rope, BackwardIsTheTransposeAndPreservesNorms) {
  RopeTable t = MakeRopeTable(kT, kHd, 500000.0);
  auto x = RandomVector(kB * kT * kH * kHd, 2), dy = RandomVector(x.size(), 3);
  std::vector<float> y(x.size()), dx(x.size(), 0.0f);
  RopeForward(t, x.data(), kB, kT, kH, y.data());
  RopeBackward(t, dy.data(), kB, kT, kH, dx.data());
  // <dy, R x> = <Rᵀ dy, x>: the backward of a linear map is its transpose.
  EXPECT_NEAR(Dot(dy, y), Dot(dx, x), 1e-5 * std::abs(Dot(dy, y)) + 1e-4);
  EXPECT_NEAR(Dot(y, y), Dot(x, x), 1e-5 * Dot(x, x));
}

TEST(Rope, InPlaceAndLengthCheck) {
  RopeTable t = MakeRopeTable(kT, kHd, 10000.0);
  auto x = RandomVector(kB * kT * kH * kHd, 4);
  std::vector<float> y(x.size()), z = x;
  RopeForward(t, x.data(), kB, kT, kH, y.data());
  RopeForward(t, z.data(), kB, kT, kH, z.data());
  EXPECT_TRUE(testing::BitEqual(y, z));
  EXPECT_THROW(RopeForward(t, x.data(), 1, kT + 1, 1, y.data()), Error);
}

}  // namespace
}  // namespace replica
