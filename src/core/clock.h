// Time measurement in one place: wall time on the monotonic clock, and CPU time of the calling
// thread or the whole process (throughput per core that other processes on a shared machine do not
// distort).
#pragma once
#include <chrono>

namespace replica {

using Clock = std::chrono::steady_clock;

// Seconds from `a` to `b`.
inline double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
// Seconds from `since` to now.
inline double SecondsSince(Clock::time_point since) { return SecondsBetween(since, Clock::now()); }

double ThreadCpuSeconds();   // CLOCK_THREAD_CPUTIME_ID
double ProcessCpuSeconds();  // user + system time of every thread of the process

}  // namespace replica
