#include "ops/cpu/softmax_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "op_test_util.h"

namespace replica {
namespace {
using testing::RandomVector;

// Lengths: below one vector, not a multiple of kSumLanes, several shift blocks with a tail.
const int64_t kLengths[] = {1, 7, 16, 37, 1024, 3000, 100352 + 5};

TEST(SoftmaxRows, ExpMatchesStdExpAndSumUsesTheFixedOrder) {
  for (int64_t n : kLengths) {
    std::vector<float> l = RandomVector(static_cast<size_t>(n), 11, 8.0f), e = l;
    const float shift = RowMax(l.data(), n);
    float want_max = -std::numeric_limits<float>::infinity();
    for (float x : l) want_max = std::max(want_max, x);
    EXPECT_EQ(shift, want_max) << n;
    const double sum = ExpShiftSumInPlace(e.data(), n, shift);
    for (int64_t v = 0; v < n; ++v) {
      // The exponent is the fp32 difference (as in any fp32 softmax); exp of it is within 2 ulp.
      const double want = std::exp(static_cast<double>(l[v] - shift));
      ASSERT_NEAR(e[v], want, 2.5e-7 * want + 1e-37) << "n " << n << " v " << v;
    }
    // The sum is exactly the documented order over the values written.
    EXPECT_EQ(sum, FixedOrderSumReference(e.data(), n)) << n;
  }
}

TEST(SoftmaxRows, AutoShiftGivesTheSameSoftmax) {
  for (int64_t n : kLengths) {
    std::vector<float> l = RandomVector(static_cast<size_t>(n), 12, 8.0f), e = l;
    float shift = 0;
    const double sum = ExpSumAutoShiftInPlace(e.data(), n, &shift);
    const float max = RowMax(l.data(), n);
    EXPECT_LE(shift, max);
    EXPECT_GE(shift, max - kShiftHeadroom);
    double want_sum = 0;
    for (float x : l) want_sum += std::exp(static_cast<double>(x) - max);
    // lse from either shift agrees.
    EXPECT_NEAR(shift + std::log(sum), max + std::log(want_sum), 1e-6) << n;
    for (int64_t v = 0; v < n; v += 97) {
      // fp32 exponents l - shift carry a rounding error of |l - shift| ulp-scale in relative terms.
      const double x = static_cast<double>(l[v]) - max;
      const double p = e[v] / sum, want = std::exp(x) / want_sum;
      ASSERT_NEAR(p, want, (1e-6 + 1.2e-7 * std::fabs(x)) * want + 1e-37) << n << " " << v;
    }
  }
}

TEST(SoftmaxRows, AutoShiftRescalesWhenALaterBlockIsFarLarger) {
  // The first block's max is 0; a later block holds 200: the early terms underflow to exactly 0
  // relative to the new shift, the large one becomes 1, no overflow.
  const int64_t n = 3 * kShiftBlock + 10;
  std::vector<float> l(static_cast<size_t>(n), 0.0f);
  l[2 * kShiftBlock + 3] = 200.0f;
  float shift = 0;
  const double sum = ExpSumAutoShiftInPlace(l.data(), n, &shift);
  EXPECT_EQ(shift, 200.0f);
  EXPECT_EQ(l[2 * kShiftBlock + 3], 1.0f);
  EXPECT_EQ(l[0], 0.0f);
  EXPECT_TRUE(std::isfinite(sum));
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST(SoftmaxRows, AllNegativeInfinityGivesZeros) {
  std::vector<float> l(50, -std::numeric_limits<float>::infinity());
  float shift = 0;
  EXPECT_EQ(ExpSumAutoShiftInPlace(l.data(), 50, &shift), 0.0);
  for (float x : l) EXPECT_EQ(x, 0.0f);
}

TEST(SoftmaxRows, ScaleRow) {
  std::vector<float> l = RandomVector(37, 13), want = l;
  ScaleRow(l.data(), 37, 0.25f);
  for (size_t i = 0; i < l.size(); ++i) EXPECT_EQ(l[i], want[i] * 0.25f);
}

}  // namespace
}  // namespace replica
