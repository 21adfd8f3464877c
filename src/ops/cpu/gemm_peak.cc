#include "ops/cpu/gemm_peak.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "ops/cpu/gemm.h"

namespace replica {

GemmPeak MeasureGemmPeak(int64_t n, double budget_s) {
  using Clock = std::chrono::steady_clock;
  const size_t nn = static_cast<size_t>(n * n);
  std::vector<float> a(nn), b(nn), c(nn);
  for (size_t i = 0; i < nn; ++i) {
    a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    b[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  const auto start = Clock::now();
  Sgemm(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);  // warm-up
  double best = 1e30;
  int calls = 0;
  while (calls < 3 || std::chrono::duration<double>(Clock::now() - start).count() < budget_s) {
    const auto t0 = Clock::now();
    Sgemm(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    if (++calls >= 50) break;
  }
  GemmPeak p;
  p.n = n;
  p.flops_per_s = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
                  best;
  p.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return p;
}

}  // namespace replica
