#include "ops/cpu/rmsnorm.h"

#include <gtest/gtest.h>

#include "core/threads.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::DirectionalFdError;
using testing::Dot;
using testing::RandomVector;
using testing::RelErr;

constexpr int64_t kRows = 37, kN = 150;  // n not a multiple of the 64-column tile
constexpr double kEps = 1e-5;

TEST(RMSNorm, ForwardMatchesReference) {
  auto x = RandomVector(kRows * kN, 1, 2.0f), w = RandomVector(kN, 2, 0.1f, 1.0f);
  std::vector<float> y(x.size()), yr(x.size()), rs(kRows), rsr(kRows);
  RMSNormForward(x.data(), w.data(), kRows, kN, kEps, y.data(), rs.data());
  RMSNormForwardReference(x.data(), w.data(), kRows, kN, kEps, yr.data(), rsr.data());
  EXPECT_LT(RelErr(y, yr), 1e-7);
  EXPECT_LT(RelErr(rs, rsr), 1e-7);
  // In place gives the same bits.
  std::vector<float> inplace = x;
  RMSNormForward(inplace.data(), w.data(), kRows, kN, kEps, inplace.data(), rs.data());
  EXPECT_TRUE(BitEqual(inplace, y));
}

TEST(RMSNorm, AddForwardIsResidualPlusNorm) {
  auto x = RandomVector(kRows * kN, 21), w = RandomVector(kN, 22, 0.1f, 1.0f);
  auto res = RandomVector(x.size(), 23);
  std::vector<float> y(x.size()), fused(x.size()), rs(kRows), rs2(kRows);
  RMSNormForward(x.data(), w.data(), kRows, kN, kEps, y.data(), rs.data());
  for (size_t i = 0; i < y.size(); ++i) y[i] = res[i] + y[i];
  RMSNormAddForward(x.data(), w.data(), res.data(), kRows, kN, kEps, fused.data(), rs2.data());
  EXPECT_TRUE(BitEqual(fused, y));
  EXPECT_TRUE(BitEqual(rs, rs2));
}

TEST(RMSNorm, BackwardMatchesReferenceAndAccumulates) {
  auto x = RandomVector(kRows * kN, 3), w = RandomVector(kN, 4, 0.1f, 1.0f);
  auto dy = RandomVector(x.size(), 5);
  std::vector<float> y(x.size()), rs(kRows);
  RMSNormForward(x.data(), w.data(), kRows, kN, kEps, y.data(), rs.data());
  std::vector<float> dx(x.size(), 0.5f), dw(kN, -0.25f), dxr(x.size(), 0.5f), dwr(kN, -0.25f);
  RMSNormBackward(x.data(), w.data(), rs.data(), dy.data(), kRows, kN, dx.data(), dw.data());
  RMSNormBackwardReference(x.data(), w.data(), rs.data(), dy.data(), kRows, kN, dxr.data(),
                           dwr.data());
  EXPECT_LT(RelErr(dx, dxr), 1e-6);
  EXPECT_LT(RelErr(dw, dwr), 1e-6);
}

TEST(RMSNorm, BackwardMatchesFiniteDifferences) {
  auto x = RandomVector(kRows * kN, 6), w = RandomVector(kN, 7, 0.1f, 1.0f);
  auto dy = RandomVector(x.size(), 8);
  std::vector<float> y(x.size()), rs(kRows), dx(x.size()), dw(kN);
  auto f = [&] {
    RMSNormForward(x.data(), w.data(), kRows, kN, kEps, y.data(), rs.data());
    return Dot(dy, y);
  };
  f();
  RMSNormBackward(x.data(), w.data(), rs.data(), dy.data(), kRows, kN, dx.data(), dw.data());
  EXPECT_LT(DirectionalFdError(x, dx, f, 1e-3, 9), 1e-3);
  EXPECT_LT(DirectionalFdError(w, dw, f, 1e-3, 10), 1e-3);
}

TEST(RMSNorm, BitIdenticalAcrossThreadCounts) {
  const int64_t rows = 301, n = 200;
  auto x = RandomVector(rows * n, 11), w = RandomVector(n, 12, 0.1f, 1.0f);
  auto dy = RandomVector(x.size(), 13);
  std::vector<float> out[2], dxs[2], dws[2];
  for (int t = 0; t < 2; ++t) {
    SetNumThreads(t + 1);
    std::vector<float> rs(rows);
    out[t].resize(x.size());
    dxs[t].assign(x.size(), 0.0f);
    dws[t].assign(n, 0.0f);
    RMSNormForward(x.data(), w.data(), rows, n, kEps, out[t].data(), rs.data());
    RMSNormBackward(x.data(), w.data(), rs.data(), dy.data(), rows, n, dxs[t].data(),
                    dws[t].data());
  }
  SetNumThreads(0);
  EXPECT_TRUE(BitEqual(out[0], out[1]));
  EXPECT_TRUE(BitEqual(dxs[0], dxs[1]));
  EXPECT_TRUE(BitEqual(dws[0], dws[1]));
}

}  // namespace
}  // namespace replica
