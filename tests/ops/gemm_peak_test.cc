// MeasureGemmPeak: trials, the per-machine cache (the peak is the best rate ever measured for the
// same key; an unreadable cache is ignored) and Describe() naming which peak was used.
#include "ops/cpu/gemm_peak.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace replica {
namespace {

GemmPeakOptions Small(const std::string& cache) {
  GemmPeakOptions o;
  o.n = 64;
  o.trials = 3;
  o.trial_s = 0.002;
  o.pause_s = 0;
  o.cache_path = cache;
  return o;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("replica-gemm-peak-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TEST(GemmPeak, WithoutCacheThePeakIsThisProcessFastestTrial) {
  const GemmPeak p = MeasureGemmPeak(Small("off"));
  EXPECT_EQ(p.trials, 3);
  EXPECT_GT(p.measured_flops_per_s, 0);
  EXPECT_GE(p.measured_flops_per_s, p.median_trial_flops_per_s);
  EXPECT_EQ(p.flops_per_s, p.measured_flops_per_s);
  EXPECT_TRUE(p.cache_path.empty());
  EXPECT_NE(p.Describe().find("fastest of 3 trials"), std::string::npos) << p.Describe();
}

TEST(GemmPeak, CacheKeepsTheBestRateEverMeasured) {
  const std::string path = TempPath("cache.json");
  std::filesystem::remove(path);
  const GemmPeak first = MeasureGemmPeak(Small(path));
  ASSERT_EQ(first.cache_path, path);
  EXPECT_EQ(first.flops_per_s, first.measured_flops_per_s);
  nlohmann::json cache = nlohmann::json::parse(ReadFile(path));
  ASSERT_TRUE(cache.contains(first.key)) << cache.dump();
  EXPECT_EQ(cache[first.key]["flops_per_s"].get<double>(), first.measured_flops_per_s);

  // A faster earlier measurement wins and is not overwritten by a slower one.
  cache[first.key]["flops_per_s"] = 1e18;
  WriteFileAtomic(path, cache.dump());
  const GemmPeak second = MeasureGemmPeak(Small(path));
  EXPECT_EQ(second.flops_per_s, 1e18);
  EXPECT_EQ(second.cached_flops_per_s, 1e18);
  EXPECT_LT(second.measured_flops_per_s, 1e18);
  EXPECT_NE(second.Describe().find("best on this machine"), std::string::npos) << second.Describe();
  EXPECT_EQ(nlohmann::json::parse(ReadFile(path))[first.key]["flops_per_s"].get<double>(), 1e18);
  std::filesystem::remove(path);
}

TEST(GemmPeak, UnreadableCacheIsIgnored) {
  const std::string path = TempPath("garbage.json");
  { std::ofstream(path) << "not json {"; }
  const GemmPeak p = MeasureGemmPeak(Small(path));
  EXPECT_EQ(p.cached_flops_per_s, 0);
  EXPECT_EQ(p.flops_per_s, p.measured_flops_per_s);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace replica
