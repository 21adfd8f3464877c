// NonFiniteGuard: finite steps pass and reset the count; NaN/Inf steps are refused and counted;
// kMaxConsecutive in a row stop the run with an Error naming the steps.
#include "train/non_finite_guard.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "testing/util.h"

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

// A guard restored from the counts a checkpoint keeps decides as the uninterrupted one: it stops
// at the same step, naming the same first step, and keeps counting the total.
TEST(NonFiniteGuard, RestoredCountsContinueTheRun) {
  const auto run = [](NonFiniteGuard& g, int64_t from, int64_t to) -> int64_t {
    for (int64_t s = from; s <= to; ++s) {
      g.Observe(s, s == 1 || s == 3 ? 2.0 : NAN, 1.0);  // finite at steps 1 and 3 only
      try {
        g.StopIfDiverged();
      } catch (const Error&) {
        return s;
      }
    }
    return 0;
  };
  NonFiniteGuard whole;
  const int64_t stop_whole = run(whole, 1, 20);
  EXPECT_EQ(stop_whole, 3 + NonFiniteGuard::kMaxConsecutive);  // steps 4 .. 8

  NonFiniteGuard before;
  EXPECT_EQ(run(before, 1, 5), 0);  // a checkpoint at step 5: 3 non-finite, 2 in a row from 4
  EXPECT_EQ(before.total(), 3);
  EXPECT_EQ(before.consecutive(), 2);
  EXPECT_EQ(before.first_step(), 4);
  NonFiniteGuard resumed;
  resumed.Restore(before.total(), before.consecutive(), before.first_step());
  EXPECT_EQ(run(resumed, 6, 20), stop_whole);
  EXPECT_EQ(resumed.total(), whole.total());
  const std::string message = test::ErrorOf([&] { resumed.StopIfDiverged(); });
  EXPECT_EQ(message, test::ErrorOf([&] { whole.StopIfDiverged(); }));
  EXPECT_NE(message.find("steps 4 to 8"), std::string::npos) << message;

  // A guard that forgot the counts would run on to step 10.
  NonFiniteGuard forgetful;
  EXPECT_EQ(run(forgetful, 6, 20), 10);

  EXPECT_NE(test::ErrorOf([] { NonFiniteGuard().Restore(1, 2, 4); }), "<no error>");
  EXPECT_NE(test::ErrorOf([] { NonFiniteGuard().Restore(9, NonFiniteGuard::kMaxConsecutive, 4); }),
            "<no error>");
  EXPECT_NE(test::ErrorOf([] { NonFiniteGuard().Restore(3, 2, 0); }), "<no error>");
}

}  // namespace
}  // namespace replica
