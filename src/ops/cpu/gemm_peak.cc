#include "ops/cpu/gemm_peak.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "ops/cpu/gemm_bf16.h"

namespace replica {

GemmPeak MeasureGemmPeak(int64_t n, double budget_s, Precision precision) {
  using Clock = std::chrono::steady_clock;
  const size_t nn = static_cast<size_t>(n * n);
  std::vector<float> a(nn), b(nn), c(nn);
  for (size_t i = 0; i < nn; ++i) {
    a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    b[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  const auto start = Clock::now();
  Gemm(precision, false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);  // warm-up
  double best = 1e30;
  int calls = 0;
  while (calls < 3 || std::chrono::duration<double>(Clock::now() - start).count() < budget_s) {
    const auto t0 = Clock::now();
    Gemm(precision, false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
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

double FlopsPerCyclePerCore(Isa isa, Precision precision) {
  if (isa == Isa::kAmx && precision == Precision::kBf16) return 1024;
  if (isa >= Isa::kAvx512) return 64;
  if (isa == Isa::kAvx2) return 32;
  return 8;  // SSE: one 128-bit multiply and one add per cycle
}

double MeasureCoreClockHz() {
  using Clock = std::chrono::steady_clock;
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    constexpr uint64_t kIterations = 1 << 20;  // × 16 dependent adds
    uint64_t x = 0, n = kIterations;
    const auto t0 = Clock::now();
    __asm__ volatile(
        "1:\n"
        "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n"
        "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n"
        "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n"
        "add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0\n"
        "dec %1\n jnz 1b\n"
        : "+r"(x), "+r"(n));
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, 16.0 * kIterations / s);
  }
  return best;
}

NominalPeak MeasureNominalPeak(Isa isa, Precision precision, int cores) {
  NominalPeak p;
  p.flops_per_cycle_per_core = FlopsPerCyclePerCore(isa, precision);
  p.clock_hz = MeasureCoreClockHz();
  p.cores = cores;
  p.flops_per_s = p.flops_per_cycle_per_core * p.clock_hz * cores;
  return p;
}

}  // namespace replica
