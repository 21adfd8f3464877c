// FirstNonFinite and FirstBf16Overflow: the first NaN/±Inf, and the first finite value that bf16's
// round-to-nearest-even turns into ±Inf, whatever the thread count and the block it falls in.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/finite.h"
#include "core/half.h"

namespace replica {
namespace {

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Finite, FirstNonFiniteFindsTheFirstAcrossBlocks) {
  std::vector<float> x(1 << 20, 1.0f);
  EXPECT_FALSE(FirstNonFinite(x.data(), x.size()));
  x[700000] = std::numeric_limits<float>::infinity();
  x[900000] = std::nanf("");
  EXPECT_EQ(FirstNonFinite(x.data(), x.size()), 700000u);
}

TEST(Finite, Bf16OverflowStartsHalfAStepPastTheLargestFinite) {
  const float largest = FromBits(0x7f7f0000u);  // bf16's largest finite, 3.3895e38
  const float tie = FromBits(0x7f7f8000u);      // halfway to the next step: rounds to even, inf
  ASSERT_TRUE(std::isfinite(Bf16ToF32(F32ToBf16(largest))));
  ASSERT_TRUE(std::isfinite(Bf16ToF32(F32ToBf16(std::nextafter(tie, 0.0f)))));
  ASSERT_FALSE(std::isfinite(Bf16ToF32(F32ToBf16(tie))));
  const std::vector<float> ok = {0.0f, largest, -largest, std::nextafter(tie, 0.0f),
                                 std::numeric_limits<float>::infinity(), std::nanf("")};
  EXPECT_FALSE(FirstBf16Overflow(ok.data(), ok.size()));  // non-finite is FirstNonFinite's
  std::vector<float> x(1 << 20, 0.5f);
  x[600001] = -tie;
  x[800000] = std::numeric_limits<float>::max();
  EXPECT_EQ(FirstBf16Overflow(x.data(), x.size()), 600001u);
}

}  // namespace
}  // namespace replica
