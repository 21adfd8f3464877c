#include "ops/cpu/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

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
    EXPECT_EQ(t.cos.f32()[j], 1.0f);
    EXPECT_EQ(t.sin.f32()[j], 0.0f);
  }
  // φ(t, j) = t · θ^(−2j/hd), evaluated in double.
  const double phi = 77.0 * std::pow(500000.0, -2.0 * 3 / kHd);
  EXPECT_EQ(t.cos.f32()[77 * kHd / 2 + 3], static_cast<float>(std::cos(phi)));
  EXPECT_EQ(t.sin.f32()[77 * kHd / 2 + 3], static_cast<float>(std::sin(phi)));
  EXPECT_THROW(MakeRopeTable(10, 15, 1e4), Error);
}

TEST(Rope, RotateHalfPairsJWithJPlusHalf) {
  // One head, position 1, theta such that inv_freq[0] = 1: dimension 0 rotates with hd/2 by 1 rad.
  RopeTable t = MakeRopeTable(2, 4, 10000.0);
  std::vector<float> x = {0, 0, 0, 0, 1, 0, 0, 0}, y(8);  // rows t=0 and t=1
  RopeForward(t, x.data(), 1, 2, 1, nullptr, y.data());
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
  RopeForward(t, x.data(), kB, kT, kH, nullptr, y.data());
  RopeForwardReference(kHd, theta, x.data(), kB, kT, kH, yr.data());
  EXPECT_LT(RelErr(y, yr), 2e-7);
  std::vector<float> dx(x.size(), 1.0f), dxr(x.size(), 1.0f);
  RopeBackward(t, x.data(), kB, kT, kH, nullptr, dx.data());
  RopeBackwardReference(kHd, theta, x.data(), kB, kT, kH, dxr.data());
  EXPECT_LT(RelErr(dx, dxr), 2e-7);
}

TEST(Rope, BackwardIsTheTransposeAndPreservesNorms) {
  RopeTable t = MakeRopeTable(kT, kHd, 500000.0);
  auto x = RandomVector(kB * kT * kH * kHd, 2), dy = RandomVector(x.size(), 3);
  std::vector<float> y(x.size()), dx(x.size(), 0.0f);
  RopeForward(t, x.data(), kB, kT, kH, nullptr, y.data());
  RopeBackward(t, dy.data(), kB, kT, kH, nullptr, dx.data());
  // <dy, R x> = <Rᵀ dy, x>: the backward of a linear map is its transpose.
  EXPECT_NEAR(Dot(dy, y), Dot(dx, x), 1e-5 * std::abs(Dot(dy, y)) + 1e-4);
  EXPECT_NEAR(Dot(y, y), Dot(x, x), 1e-5 * Dot(x, x));
}

TEST(Rope, InPlaceAndLengthCheck) {
  RopeTable t = MakeRopeTable(kT, kHd, 10000.0);
  auto x = RandomVector(kB * kT * kH * kHd, 4);
  std::vector<float> y(x.size()), z = x;
  RopeForward(t, x.data(), kB, kT, kH, nullptr, y.data());
  RopeForward(t, z.data(), kB, kT, kH, nullptr, z.data());
  EXPECT_TRUE(testing::BitEqual(y, z));
  EXPECT_THROW(RopeForward(t, x.data(), 1, kT + 1, 1, nullptr, y.data()), Error);
}

// With positions, row r is rotated by positions[r]: bit for bit the plain op's row at that
// position (in place or not), forward and backward; a position outside the table is refused.
TEST(Rope, GivenPositionsRotateEachRowAsThePlainOpRotatesThatPosition) {
  RopeTable t = MakeRopeTable(kT, kHd, 10000.0);
  const int64_t rows = 2 * kT, w = kH * kHd;
  auto x = RandomVector(rows * w, 5), dy = RandomVector(rows * w, 6);
  std::vector<int32_t> pos(rows);
  for (int64_t r = 0; r < rows; ++r) pos[r] = static_cast<int32_t>((r * 5 + 3) % kT);
  std::vector<float> y(x.size()), z = x, dx(x.size(), 0.0f);
  RopeForward(t, x.data(), 1, rows, kH, pos.data(), y.data());
  RopeForward(t, z.data(), 2, kT, kH, pos.data(), z.data());  // B·T rows either way
  EXPECT_TRUE(testing::BitEqual(y, z));
  RopeBackward(t, dy.data(), 1, rows, kH, pos.data(), dx.data());
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> plain(kT * w, 0.0f), out(kT * w), back(kT * w, 0.0f);
    std::copy(x.begin() + r * w, x.begin() + (r + 1) * w, plain.begin() + pos[r] * w);
    RopeForward(t, plain.data(), 1, kT, kH, nullptr, out.data());
    std::copy(dy.begin() + r * w, dy.begin() + (r + 1) * w, plain.begin() + pos[r] * w);
    RopeBackward(t, plain.data(), 1, kT, kH, nullptr, back.data());
    for (int64_t i = 0; i < w; ++i) {
      ASSERT_EQ(y[r * w + i], out[pos[r] * w + i]) << "row " << r;
      ASSERT_EQ(dx[r * w + i], back[pos[r] * w + i]) << "row " << r;
    }
  }
  pos[3] = static_cast<int32_t>(kT);
  EXPECT_THROW(RopeForward(t, x.data(), 1, rows, kH, pos.data(), y.data()), Error);
  pos[3] = -1;
  EXPECT_THROW(RopeBackward(t, dy.data(), 1, rows, kH, pos.data(), dx.data()), Error);
}

// ---- YaRN ----------------------------------------------------------------------------------

// The tiny-yarn fixture's full-attention settings: d = 32, θ = 500000, L = 32, s = 8.
RopeParams TinyYarn() {
  RopeParams p;
  p.type = RopeType::kYarn;
  p.theta = 500000.0;
  p.factor = 8.0;
  p.original_max_position_embeddings = 32;
  p.beta_fast = 32.0;
  p.beta_slow = 1.0;
  p.attention_factor = YarnDefaultAttentionFactor(8.0);
  return p;
}

// The values the fixture README derives by hand: low = 0, high = 2, ramp [0, 0.5, 1, ...],
// m = 0.1·ln 8 + 1 = 1.2079441541679836.
TEST(Yarn, FixtureReadmeValues) {
  const RopeParams p = TinyYarn();
  EXPECT_DOUBLE_EQ(p.attention_factor, 1.2079441541679836);
  const YarnRange r = YarnCorrectionRange(p, 32);
  EXPECT_EQ(r.low, 0.0);
  EXPECT_EQ(r.high, 2.0);
  const std::vector<double> inv = RopeInvFreq(p, 32);
  ASSERT_EQ(inv.size(), 16u);
  EXPECT_EQ(inv[0], 1.0);  // ramp 0: the plain frequency
  const double plain1 = std::pow(500000.0, -2.0 / 32);
  EXPECT_NEAR(inv[1], plain1 * (0.5 / 8 + 0.5), 1e-16);  // half-blended
  for (int j = 2; j < 16; ++j)                          // divided by s
    EXPECT_NEAR(inv[j], std::pow(500000.0, -2.0 * j / 32) / 8, 1e-15 * inv[j]) << j;
  // The released 7B: hd 128, L = 8192.
  RopeParams big = p;
  big.original_max_position_embeddings = 8192;
  EXPECT_DOUBLE_EQ(big.attention_factor, 1.2079441541679836);
  const YarnRange rb = YarnCorrectionRange(big, 128);
  EXPECT_EQ(rb.low, std::max(0.0, std::floor(128 * std::log(8192 / (64 * M_PI)) / (2 * std::log(5e5)))));
  EXPECT_EQ(rb.high, std::ceil(128 * std::log(8192 / (2 * M_PI)) / (2 * std::log(5e5))));
}

TEST(Yarn, AttentionFactorDefaults) {
  EXPECT_EQ(YarnDefaultAttentionFactor(1.0), 1.0);
  EXPECT_DOUBLE_EQ(YarnDefaultAttentionFactor(4.0), 0.1 * std::log(4.0) + 1.0);
  // DeepSeek-style mscale / mscale_all_dim: a ratio of two get_mscale values.
  EXPECT_DOUBLE_EQ(YarnDefaultAttentionFactor(40.0, 1.0, 0.707),
                   (0.1 * std::log(40.0) + 1.0) / (0.1 * 0.707 * std::log(40.0) + 1.0));
  EXPECT_DOUBLE_EQ(YarnDefaultAttentionFactor(40.0, 1.0, 1.0), 1.0);
}

// RopeInvFreq against the independently written fp64 reference, over the branches of the
// formula: truncated or not, a correction range clamped at 0 and at d − 1, low == high.
TEST(Yarn, InvFreqMatchesReference) {
  std::vector<RopeParams> cases;
  cases.push_back(TinyYarn());
  RopeParams p = TinyYarn();
  p.truncate = false;
  cases.push_back(p);
  p = TinyYarn();
  p.original_max_position_embeddings = 8192;
  cases.push_back(p);
  p.theta = 10000.0;
  p.factor = 16.0;
  p.beta_fast = 8.0;
  p.beta_slow = 0.5;
  cases.push_back(p);
  p = TinyYarn();
  p.original_max_position_embeddings = 4;  // dim(β_slow) in (−1, 0]: low == high == 0
  cases.push_back(p);
  for (int64_t hd : {8, 32, 128}) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto a = RopeInvFreq(cases[i], hd), b = RopeInvFreqReference(cases[i], hd);
      ASSERT_EQ(a.size(), b.size());
      for (size_t j = 0; j < a.size(); ++j)
        EXPECT_NEAR(a[j], b[j], 1e-14 * b[j]) << "case " << i << " hd " << hd << " j " << j;
    }
  }
  const YarnRange r = YarnCorrectionRange(cases.back(), 32);
  EXPECT_EQ(r.low, r.high);
  const auto nudged = RopeInvFreq(cases.back(), 32);  // ramp (j − 0) / 0.001: only j = 0 keeps θ^0
  EXPECT_EQ(nudged[0], 1.0);
  EXPECT_NEAR(nudged[1], std::pow(5e5, -2.0 / 32) / 8, 1e-18);
}

TEST(Yarn, TableIncludesAttentionFactorAndMatchesReference) {
  const RopeParams p = TinyYarn();
  const int64_t T = 96, hd = 32, H = 2;
  RopeTable t = MakeRopeTable(T, hd, p);
  EXPECT_FLOAT_EQ(t.cos.f32()[0], static_cast<float>(p.attention_factor));  // m · cos 0
  EXPECT_EQ(t.sin.f32()[0], 0.0f);
  const double phi = 77.0 * RopeInvFreq(p, hd)[5];
  EXPECT_EQ(t.cos.f32()[77 * 16 + 5], static_cast<float>(p.attention_factor * std::cos(phi)));
  EXPECT_EQ(t.sin.f32()[77 * 16 + 5], static_cast<float>(p.attention_factor * std::sin(phi)));
  auto x = RandomVector(kB * T * H * hd, 5);
  std::vector<float> y(x.size()), yr(x.size());
  RopeForward(t, x.data(), kB, T, H, nullptr, y.data());
  RopeForwardReference(hd, p, x.data(), kB, T, H, yr.data());
  EXPECT_LT(RelErr(y, yr), 2e-7);
  std::vector<float> dx(x.size(), 1.0f), dxr(x.size(), 1.0f);
  RopeBackward(t, x.data(), kB, T, H, nullptr, dx.data());
  RopeBackwardReference(hd, p, x.data(), kB, T, H, dxr.data());
  EXPECT_LT(RelErr(dx, dxr), 2e-7);
  // The rotation scales norms by exactly m.
  EXPECT_NEAR(Dot(y, y), p.attention_factor * p.attention_factor * Dot(x, x), 1e-5 * Dot(y, y));
  // Plain settings give the plain table, whatever the unused YaRN fields hold.
  RopeParams plain = p;
  plain.type = RopeType::kDefault;
  const RopeTable a = MakeRopeTable(T, hd, plain), b = MakeRopeTable(T, hd, 500000.0);
  ASSERT_EQ(a.cos.bytes(), b.cos.bytes());
  EXPECT_EQ(std::memcmp(a.cos.raw(), b.cos.raw(), a.cos.bytes()), 0);
}

// Each YaRN mistake the fixture README lists changes the rotated q/k of a YaRN layer by far more
// than the fp32 table error (2e-7), so the fp64 reference tells it from the right computation.
// (The model-level effect on the tiny-yarn logits is checked in tests/model/olmo3_test.cc.)
TEST(Yarn, EachReadmeMistakeMovesTheRotation) {
  const int64_t T = 96, hd = 32, H = 2;
  const RopeParams right = TinyYarn();
  auto x = RandomVector(kB * T * H * hd, 6);
  std::vector<float> good(x.size());
  RopeForwardReference(hd, right, x.data(), kB, T, H, good.data());
  RopeTable table = MakeRopeTable(T, hd, right);
  std::vector<float> ours(x.size());
  RopeForward(table, x.data(), kB, T, H, nullptr, ours.data());
  const double ours_err = RelErr(ours, good);
  EXPECT_LT(ours_err, 2e-7);

  struct Mistake {
    const char* what;
    RopeParams p;
  };
  std::vector<Mistake> mistakes;
  RopeParams m = right;
  m.type = RopeType::kDefault;
  mistakes.push_back({"no YaRN (plain RoPE)", m});
  m = right;
  m.original_max_position_embeddings = 256;
  mistakes.push_back({"original_max_position_embeddings ignored", m});
  m = right;
  m.attention_factor = 1.0;
  mistakes.push_back({"attention factor left out", m});
  m = right;
  m.attention_factor = std::sqrt(right.attention_factor);
  mistakes.push_back({"attention factor applied once", m});
  m = right;
  m.truncate = false;
  mistakes.push_back({"no floor/ceil (truncate false)", m});
  for (const Mistake& k : mistakes) {
    std::vector<float> wrong(x.size());
    RopeForwardReference(hd, k.p, x.data(), kB, T, H, wrong.data());
    const double moved = RelErr(wrong, good);
    std::printf("[yarn] %-45s moves q/k by %.3g relative (fp32 table error %.3g)\n", k.what, moved,
                ours_err);
    EXPECT_GT(moved, 1e3 * ours_err) << k.what;
  }
}

TEST(Yarn, RefusesInvalidSettings) {
  RopeParams p = TinyYarn();
  p.factor = 0.5;
  EXPECT_THROW(RopeInvFreq(p, 32), Error);
  p = TinyYarn();
  p.original_max_position_embeddings = 0;
  EXPECT_THROW(MakeRopeTable(8, 32, p), Error);
}

}  // namespace
}  // namespace replica
