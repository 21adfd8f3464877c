#include "ops/cpu/swiglu.h"

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace replica {
namespace {
using testing::DirectionalFdError;
using testing::Dot;
using testing::RandomVector;
using testing::RelErr;

constexpr int64_t kN = 1000;

TEST(SwiGLU, ForwardAndBackwardMatchReference) {
  auto g = RandomVector(kN, 1, 3.0f), u = RandomVector(kN, 2), ds = RandomVector(kN, 3);
  std::vector<float> s(kN), sr(kN);
  SwiGLUForward(g.data(), u.data(), kN, s.data());
  SwiGLUForwardReference(g.data(), u.data(), kN, sr.data());
  EXPECT_LT(RelErr(s, sr), 3e-7);
  std::vector<float> dg(kN, 1.0f), du(kN, 1.0f), dgr(kN, 1.0f), dur(kN, 1.0f);
  SwiGLUBackward(g.data(), u.data(), ds.data(), kN, dg.data(), du.data());
  SwiGLUBackwardReference(g.data(), u.data(), ds.data(), kN, dgr.data(), dur.data());
  EXPECT_LT(RelErr(dg, dgr), 3e-7);
  EXPECT_LT(RelErr(du, dur), 3e-7);
}

TEST(SwiGLU, BackwardMatchesFiniteDifferences) {
  auto g = RandomVector(kN, 4, 3.0f), u = RandomVector(kN, 5), ds = RandomVector(kN, 6);
  std::vector<float> s(kN), dg(kN), du(kN);
  auto f = [&] {
    SwiGLUForward(g.data(), u.data(), kN, s.data());
    return Dot(ds, s);
  };
  SwiGLUBackward(g.data(), u.data(), ds.data(), kN, dg.data(), du.data());
  EXPECT_LT(DirectionalFdError(g, dg, f, 1e-3, 7), 1e-3);
  EXPECT_LT(DirectionalFdError(u, du, f, 1e-3, 8), 1e-3);
}

TEST(SwiGLU, ExtremeGatesStayFinite) {
  std::vector<float> g = {-1000.0f, 1000.0f, 0.0f}, u = {1, 1, 1}, s(3), dg(3), du(3);
  std::vector<float> ds = {1, 1, 1};
  SwiGLUForward(g.data(), u.data(), 3, s.data());
  SwiGLUBackward(g.data(), u.data(), ds.data(), 3, dg.data(), du.data());
  EXPECT_EQ(s[0], -0.0f);
  EXPECT_EQ(s[1], 1000.0f);
  EXPECT_EQ(dg[0], 0.0f);
  EXPECT_EQ(dg[1], 1.0f);
  EXPECT_EQ(dg[2], 0.5f);
}

}  // namespace
}  // namespace replica
