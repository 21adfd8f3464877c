#include "infer/memory_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "core/huge_pages.h"

namespace replica {

double MeasureReadBandwidth(size_t bytes, int repeats) {
  const size_t n = bytes / sizeof(uint64_t);
  // Huge-page memory, as the decoder's weight copy: the bound is the best this machine reads.
  HugePageBuffer mem = HugePageBuffer::Allocate(n * sizeof(uint64_t));
  uint64_t* buf = reinterpret_cast<uint64_t*>(mem.data());
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
