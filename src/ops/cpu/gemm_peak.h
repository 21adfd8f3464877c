// The denominator of MFU (docs/design.md §6): the fp32 GEMM rate this machine reaches in this process,
// with the same Sgemm (ops/cpu/gemm.h) and thread count the model uses, on a square problem large
// enough to be compute bound. Best of several timed calls after a warm-up.
#pragma once
#include <cstdint>

namespace replica {

struct GemmPeak {
  double flops_per_s = 0;  // 2·n³ / best time
  int64_t n = 0;           // problem size used
  double seconds = 0;      // time spent measuring
};

// Measures for about `budget_s` seconds (at least 3 timed calls).
GemmPeak MeasureGemmPeak(int64_t n = 1024, double budget_s = 0.5);

}  // namespace replica
