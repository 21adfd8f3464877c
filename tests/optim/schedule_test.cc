// LR schedules against the OLMo-core formulas with the Olmo 3 7B numbers (olmo3-recipe.md §4).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "core/error.h"
#include "optim/schedule.h"

namespace replica {
namespace {

constexpr double kPi = std::numbers::pi;

ScheduleConfig Stage1() {
  ScheduleConfig s;
  s.type = ScheduleType::kCosine;
  s.warmup = 2000;
  s.t_max = 1192093;
  s.alpha_f = 0.1;
  return s;
}

TEST(Schedule, Stage1CosineWithWarmup) {
  const ScheduleConfig s = Stage1();
  const double lr0 = 3e-4;
  // Warmup: lr = 3e-4 * s / 2000; s = 1 gives 1.5e-7.
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 1), 1.5e-7);
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 1000), 1.5e-4);
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 1999), 3e-4 * 1999 / 2000);
  // Cosine: 3e-5 + 2.7e-4 (1 + cos(pi (s - 2000) / 1190093)) / 2.
  for (int64_t step : {2000LL, 2001LL, 100000LL, 476838LL, 597046LL, 1000000LL, 1192092LL}) {
    const double want =
        3e-5 + 2.7e-4 * (1 + std::cos(kPi * static_cast<double>(step - 2000) / 1190093.0)) / 2;
    EXPECT_NEAR(LrAt(s, lr0, step), want, 1e-18) << "step " << step;
  }
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 2000), 3e-4);
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 1192093), 3e-5);
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 2000000), 3e-5);
  // Stage 2's peak LR is stage 1's LR at ~2T tokens (s = 476,838), to 7 significant digits.
  EXPECT_NEAR(LrAt(s, lr0, 476838), 2.0712352850360292e-4, 1e-10);
}

TEST(Schedule, Stage1Part2HalfCosine) {
  ScheduleConfig s;
  s.type = ScheduleType::kCosineContinuation;
  s.warmup = 597046;
  s.t_max = 1668931;
  s.alpha_f = 0.1;
  const double lr0 = 3e-4;
  // Linear ramp to the cosine midpoint 1.65e-4.
  EXPECT_NEAR(LrAt(s, lr0, 1), 1.65e-4 / 597046, 1e-20);
  EXPECT_NEAR(LrAt(s, lr0, 596048), 1.6472e-4, 1e-8);
  EXPECT_NEAR(LrAt(s, lr0, 597046), 1.65e-4, 1e-17);
  const double n = 1071885;
  for (int64_t step : {597046LL, 700000LL, 1000000LL, 1413814LL, 1668930LL}) {
    const double c = static_cast<double>(step - 597046);
    const double want = 3e-5 + 2.7e-4 * (1 + std::cos(kPi * (c + n) / (2 * n))) / 2;
    EXPECT_NEAR(LrAt(s, lr0, step), want, 1e-18) << "step " << step;
  }
  // The run stops at step 1,413,814 with lr ~ 3.93e-5.
  EXPECT_NEAR(LrAt(s, lr0, 1413814), 3.93e-5, 5e-8);
  EXPECT_DOUBLE_EQ(LrAt(s, lr0, 1668931), 3e-5);
}

TEST(Schedule, Stage2LinearToZero) {
  ScheduleConfig s;
  s.type = ScheduleType::kLinear;
  s.warmup = 0;
  s.t_max = 47684;
  s.alpha_f = 0.0;
  const double lr0 = 2.0712352850360292e-4;
  ValidateSchedule(s, lr0);
  for (int64_t step : {1LL, 2LL, 10000LL, 23842LL, 47683LL}) {
    EXPECT_NEAR(LrAt(s, lr0, step), lr0 * (1 - static_cast<double>(step) / 47684.0), 1e-19)
        << "step " << step;
  }
  EXPECT_NEAR(LrAt(s, lr0, 1), 2.07119e-4, 1e-9);
  EXPECT_EQ(LrAt(s, lr0, 47684), 0.0);
  EXPECT_EQ(LrAt(s, lr0, 50000), 0.0);
}

TEST(Schedule, ConstantAndWsd) {
  ScheduleConfig c;
  c.type = ScheduleType::kConstant;
  EXPECT_EQ(LrAt(c, 1e-3, 1), 1e-3);
  EXPECT_EQ(LrAt(c, 1e-3, 123456), 1e-3);
  c.warmup = 10;
  EXPECT_DOUBLE_EQ(LrAt(c, 1e-3, 5), 5e-4);
  EXPECT_EQ(LrAt(c, 1e-3, 11), 1e-3);

  ScheduleConfig w;
  w.type = ScheduleType::kWsd;
  w.warmup = 100;
  w.t_max = 1000;
  w.decay_steps = 200;
  ValidateSchedule(w, 1e-3);
  EXPECT_DOUBLE_EQ(LrAt(w, 1e-3, 50), 5e-4);
  EXPECT_EQ(LrAt(w, 1e-3, 100), 1e-3);
  EXPECT_EQ(LrAt(w, 1e-3, 500), 1e-3);
  EXPECT_EQ(LrAt(w, 1e-3, 799), 1e-3);
  EXPECT_DOUBLE_EQ(LrAt(w, 1e-3, 800), 1e-3);
  EXPECT_DOUBLE_EQ(LrAt(w, 1e-3, 900), 5e-4);
  EXPECT_EQ(LrAt(w, 1e-3, 1000), 0.0);
}

TEST(Schedule, RefusesInconsistentSettings) {
  ScheduleConfig s = Stage1();
  s.warmup = s.t_max;
  EXPECT_THROW(ValidateSchedule(s, 3e-4), Error);
  s = Stage1();
  s.alpha_f = 1.5;
  EXPECT_THROW(ValidateSchedule(s, 3e-4), Error);
  EXPECT_THROW(ValidateSchedule(Stage1(), 0.0), Error);
  EXPECT_THROW(ParseScheduleType("cosin", "optim.schedule.type"), Error);
  try {
    ParseScheduleType("cosin", "optim.schedule.type");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optim.schedule.type"), std::string::npos);
  }
}

}  // namespace
}  // namespace replica
