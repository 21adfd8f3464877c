#include "infer/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace replica {

double MeasureReadBandwidth(size_t bytes, int repeats) {
  const size_t n = bytes / sizeof(uint64_t);
  std::vector<uint64_t> buf(n);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) buf[i] = i;  // touch every page, from the threads that read it
  double best = 0;
  volatile uint64_t sink = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (size_t i = 0; i < n; ++i) total += buf[i];
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sink = sink + total;
    best = std::max(best, static_cast<double>(n * sizeof(uint64_t)) / s);
  }
  return best;
}

}  // namespace replica
