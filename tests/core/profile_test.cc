#include "core/profile.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace replica {
namespace {

void Spin(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
  }
}

// Time in a nested scope is charged to the inner category only; the outer gets the rest.
TEST(Profile, NestedScopesChargeExclusiveTime) {
  {
    ProfileScope warm(ProfileCategory::kData);  // makes this thread the profiled one
  }
  ProfileReset();
  const auto start = std::chrono::steady_clock::now();
  {
    ProfileScope outer(ProfileCategory::kLmHeadLoss);
    Spin(0.005);
    {
      ProfileScope inner(ProfileCategory::kGemm);
      Spin(0.1);
    }
    Spin(0.005);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const ProfileTotals t = ProfileSnapshot();
  // Lower bounds are exact (spins end at a wall-clock deadline). Exclusive charging means the two
  // categories add up to at most the block's wall time, however long the thread was descheduled:
  // charging the inner scope to the outer too would exceed it by the inner's 0.1 s.
  EXPECT_GE(t.Get(ProfileCategory::kGemm), 0.1);
  EXPECT_GE(t.Get(ProfileCategory::kLmHeadLoss), 0.01);
  EXPECT_LE(t.Get(ProfileCategory::kGemm) + t.Get(ProfileCategory::kLmHeadLoss), wall + 1e-3);
  EXPECT_EQ(t.Get(ProfileCategory::kNorm), 0.0);
  const std::string table = ProfileTable(t, 0.1);
  EXPECT_NE(table.find("gemm"), std::string::npos);
  EXPECT_NE(table.find("unattributed"), std::string::npos);
  EXPECT_NE(table.find("outside GEMM + attention"), std::string::npos);
}

// Other threads are not profiled and see an empty snapshot.
TEST(Profile, OtherThreadsAreIgnored) {
  {
    ProfileScope warm(ProfileCategory::kData);
  }
  ProfileReset();
  double other_sum = -1;
  std::thread t([&] {
    {
      ProfileScope s(ProfileCategory::kGemm);
      Spin(0.01);
    }
    other_sum = ProfileSnapshot().Sum();
    ProfileReset();  // no effect from here
  });
  t.join();
  EXPECT_EQ(other_sum, 0.0);
  EXPECT_EQ(ProfileSnapshot().Get(ProfileCategory::kGemm), 0.0);
}

}  // namespace
}  // namespace replica
