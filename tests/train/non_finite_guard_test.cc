// NonFiniteGuard: finite steps pass and reset the count; NaN/Inf steps are refused and counted;
// kMaxConsecutive in a row stop the run with an Error naming the steps.
#include "train/non_finite_guard.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace replica {
namespace {

TEST(NonFiniteGuard, RefusesAndCountsNonFiniteSteps) {
  NonFiniteGuard g;
  EXPECT_TRUE(g.Observe(1, 2.5, 1.0));
  EXPECT_FALSE(g.Observe(2, NAN, 1.0));
  EXPECT_FALSE(g.Observe(3, 2.0, INFINITY));
  EXPECT_FALSE(g.Observe(4, -INFINITY, NAN));
  EXPECT_EQ(g.consecutive(), 3);
  EXPECT_NO_THROW(g.StopIfDiverged());
  EXPECT_TRUE(g.Observe(5, 2.0, 1.0));  // a finite step ends the streak
  EXPECT_EQ(g.consecutive(), 0);
  EXPECT_EQ(g.total(), 3);
}

TEST(NonFiniteGuard, StopsAfterMaxConsecutive) {
  NonFiniteGuard g;
  EXPECT_TRUE(g.Observe(1, 2.5, 1.0));
  for (int64_t s = 2; s < 2 + NonFiniteGuard::kMaxConsecutive; ++s) {
    EXPECT_NO_THROW(g.StopIfDiverged()) << s;
    EXPECT_FALSE(g.Observe(s, NAN, NAN));
  }
  try {
    g.StopIfDiverged();
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("steps 2 to " + std::to_string(1 + NonFiniteGuard::kMaxConsecutive)),
              std::string::npos) << m;
    EXPECT_NE(m.find("optim.lr"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace replica
