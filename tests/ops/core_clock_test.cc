// The core clock of the nominal peak (ops/cpu/core_clock.h): the imul-chain measurement is a
// plausible clock for this machine, and the choice between it and the references cpuid 0x16 and
// /proc/cpuinfo report is named and follows the documented window.
#include "ops/cpu/core_clock.h"

#include <gtest/gtest.h>

namespace replica {
namespace {

constexpr double kGHz = 1e9;

// Not a timing assertion: a sanity range that any x86-64 core this project runs on satisfies
// (the fastest of 24 repetitions, so a loaded machine still reads its clock).
TEST(CoreClock, MeasurementIsAPlausibleClockForThisMachine) {
  const CoreClock c = MeasureCoreClock();
  EXPECT_GE(c.measured_hz, 0.5 * kGHz) << c.Describe();
  EXPECT_LE(c.measured_hz, 7.0 * kGHz) << c.Describe();
  if (c.cpuinfo_hz > 0) {
    EXPECT_GE(c.measured_hz, 0.5 * c.cpuinfo_hz) << c.Describe();
    EXPECT_LE(c.measured_hz, 2.0 * c.cpuinfo_hz) << c.Describe();
  }
  EXPECT_GE(c.hz, 0.5 * kGHz) << c.Describe();
  EXPECT_LE(c.hz, 7.0 * kGHz) << c.Describe();
  EXPECT_TRUE(c.source == CoreClock::kMeasured || c.source == CoreClock::kCpuid ||
              c.source == CoreClock::kCpuinfo)
      << c.source;
  const double expected = c.source == CoreClock::kCpuid     ? c.cpuid_base_hz
                          : c.source == CoreClock::kCpuinfo ? c.cpuinfo_hz
                                                            : c.measured_hz;
  EXPECT_EQ(c.hz, expected) << c.Describe();
  const std::string named =
      c.source == CoreClock::kMeasured ? " measured (imul chain)" : " from " + c.source;
  EXPECT_NE(c.Describe().find(named), std::string::npos) << c.Describe();
  EXPECT_NE(c.Describe().find("/proc/cpuinfo"), std::string::npos) << c.Describe();
  EXPECT_NE(c.Describe().find("cpuid 0x16"), std::string::npos) << c.Describe();
}

TEST(CoreClock, ReferencesAreEitherAbsentOrPlausible) {
  double base = -1, max = -1;
  CpuidFrequencyHz(&base, &max);
  EXPECT_TRUE(base == 0 || (base >= 0.1 * kGHz && base <= 10 * kGHz)) << base;
  EXPECT_TRUE(max == 0 || max >= base) << base << " " << max;
  const double cpuinfo = CpuinfoFrequencyHz();
  EXPECT_TRUE(cpuinfo == 0 || (cpuinfo >= 0.1 * kGHz && cpuinfo <= 10 * kGHz)) << cpuinfo;
}

TEST(CoreClock, MeasurementWithinTheWindowIsUsed) {
  // A 3.5 GHz boost clock against a 2.6 GHz base reported by /proc/cpuinfo (a KVM guest).
  CoreClock c = ChooseCoreClock(3.5 * kGHz, 0, 0, 2.6 * kGHz);
  EXPECT_EQ(c.source, CoreClock::kMeasured);
  EXPECT_EQ(c.hz, 3.5 * kGHz);
  EXPECT_TRUE(c.note.empty()) << c.note;
  EXPECT_NE(c.Describe().find("3.50 GHz measured"), std::string::npos) << c.Describe();
  EXPECT_NE(c.Describe().find("/proc/cpuinfo 2.60 GHz"), std::string::npos) << c.Describe();
  EXPECT_NE(c.Describe().find("cpuid 0x16 not reported"), std::string::npos) << c.Describe();
  // cpuid's maximum bounds the window from above: 3.8 GHz turbo over a 2.0 GHz base.
  c = ChooseCoreClock(3.8 * kGHz, 2.0 * kGHz, 3.8 * kGHz, 2.0 * kGHz);
  EXPECT_EQ(c.source, CoreClock::kMeasured);
  EXPECT_NE(c.Describe().find("cpuid 0x16 base 2.00 GHz, max 3.80 GHz"), std::string::npos)
      << c.Describe();
}

TEST(CoreClock, MeasurementOutsideTheWindowGivesWayToTheReference) {
  // A folded chain reading 22.3 GHz on a 2.0 GHz part: cpuid's base is used and named.
  CoreClock c = ChooseCoreClock(22.3 * kGHz, 2.0 * kGHz, 3.8 * kGHz, 2.0 * kGHz);
  EXPECT_EQ(c.source, CoreClock::kCpuid);
  EXPECT_EQ(c.hz, 2.0 * kGHz);
  EXPECT_EQ(c.measured_hz, 22.3 * kGHz);
  EXPECT_NE(c.note.find("22.30 GHz"), std::string::npos) << c.note;
  EXPECT_NE(c.Describe().find("2.00 GHz from cpuid 0x16 (measured 22.30 GHz)"), std::string::npos)
      << c.Describe();
  // Without cpuid 0x16 (AMD, many hypervisors) /proc/cpuinfo is the reference, 2 x it the ceiling.
  c = ChooseCoreClock(22.3 * kGHz, 0, 0, 2.1 * kGHz);
  EXPECT_EQ(c.source, CoreClock::kCpuinfo);
  EXPECT_EQ(c.hz, 2.1 * kGHz);
  EXPECT_FALSE(c.note.empty());
  EXPECT_EQ(ChooseCoreClock(5.3 * kGHz, 0, 0, 2.1 * kGHz).source, CoreClock::kCpuinfo);
  EXPECT_EQ(ChooseCoreClock(5.2 * kGHz, 0, 0, 2.1 * kGHz).source, CoreClock::kMeasured);
  // An under-read (a time-sliced vCPU, a slower multiplier) below 0.75 x the reference.
  c = ChooseCoreClock(0.32 * kGHz, 0, 0, 2.6 * kGHz);
  EXPECT_EQ(c.source, CoreClock::kCpuinfo);
  EXPECT_EQ(c.hz, 2.6 * kGHz);
  EXPECT_EQ(ChooseCoreClock(2.0 * kGHz, 0, 0, 2.6 * kGHz).source, CoreClock::kMeasured);
  // cpuid's base is the reference when both are reported.
  EXPECT_EQ(ChooseCoreClock(1.0 * kGHz, 2.0 * kGHz, 0, 3.0 * kGHz).hz, 2.0 * kGHz);
}

TEST(CoreClock, WithoutAReferenceTheMeasurementIsUsedAndSaysSo) {
  const CoreClock c = ChooseCoreClock(3.1 * kGHz, 0, 0, 0);
  EXPECT_EQ(c.source, CoreClock::kMeasured);
  EXPECT_EQ(c.hz, 3.1 * kGHz);
  EXPECT_NE(c.note.find("no reference"), std::string::npos) << c.note;
  EXPECT_NE(c.Describe().find("/proc/cpuinfo absent"), std::string::npos) << c.Describe();
}

}  // namespace
}  // namespace replica
