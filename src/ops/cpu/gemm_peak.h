// The denominator of MFU (docs/design.md §6): the fp32 GEMM rate this machine reaches in this process,
// with the same Sgemm (ops/cpu/gemm.h) and thread count the model uses, on a square problem large
// enough to be compute bound. Best of several timed calls after a warm-up.
// For bf16 precision the rate is that of the bf16 GEMM (ops/cpu/gemm_bf16.h) in use: MFU is taken
// against the peak of the mode in use. NominalPeak gives the other denominator, the ISA's
// FLOP/cycle/core × measured clock × cores (the table in docs/precision.md).
#pragma once
#include <cstdint>

#include "ops/cpu/isa.h"
#include "ops/cpu/precision.h"

namespace replica {

struct GemmPeak {
  double flops_per_s = 0;  // 2·n³ / best time
  int64_t n = 0;           // problem size used
  double seconds = 0;      // time spent measuring
};

// Measures for about `budget_s` seconds (at least 3 timed calls).
GemmPeak MeasureGemmPeak(int64_t n = 1024, double budget_s = 0.5,
                         Precision precision = Precision::kFp32);

struct NominalPeak {
  double flops_per_cycle_per_core = 0;  // of the unit that does the mode's math (table below)
  double clock_hz = 0;                  // measured on the calling thread
  int cores = 0;                        // threads in use
  double flops_per_s = 0;               // the product
};
// FLOP/cycle/core: fp32 (and emulated bf16) 32 on AVX2 (two 256-bit FMA pipes), 64 on AVX-512
// (two 512-bit FMA pipes); bf16 on AMX 1024 (one 16×16×32 bf16 tile product per 16 cycles).
double FlopsPerCyclePerCore(Isa isa, Precision precision);
NominalPeak MeasureNominalPeak(Isa isa, Precision precision, int cores);
// The core clock, from a chain of dependent integer adds (one per cycle), ~20 ms.
double MeasureCoreClockHz();

}  // namespace replica
