// The denominator of MFU (docs/design.md §6): the fp32 GEMM rate this machine reaches, with the
// same Sgemm (ops/cpu/gemm.h) and thread count the model uses, on a square problem large enough
// to be compute bound.
//
// One timing is at the mercy of whatever else the machine runs (on a shared machine the rate of
// one 0.5 s window swung 54-151 GFLOP/s), so the measurement is several short trials spread over
// a fixed budget, keeping the fastest call: load only ever slows a GEMM down, so the fastest call
// is the closest to what the hardware does. With a cache file the peak is also the highest rate
// ever measured on this machine for the same key (CPU model, thread count, problem size, BLAS
// kernel), so MFU figures of different runs share one denominator once the cache has seen a quiet
// moment. Describe() says which peak was used.
//
// For bf16 precision the rate is that of the bf16 GEMM (ops/cpu/gemm_bf16.h) in use: MFU is taken
// against the peak of the mode in use (the precision is part of the cache key). NominalPeak gives
// the other denominator, the ISA's FLOP/cycle/core × core clock × cores (docs/precision.md), the
// clock measured and checked against cpuid and /proc/cpuinfo (core_clock.h).
#pragma once
#include <cstdint>
#include <string>

#include "ops/cpu/core_clock.h"
#include "ops/cpu/isa.h"
#include "ops/precision.h"

namespace replica {

struct GemmPeakOptions {
  int64_t n = 1024;          // problem size n x n x n
  int trials = 5;            // short trials, each the fastest of its calls
  double trial_s = 0.08;     // time per trial (at least 2 calls each)
  double pause_s = 0.04;     // idle time between trials, to sample different moments
  // "" = DefaultGemmPeakCachePath(); "off" = no cache (the peak is this process's measurement).
  std::string cache_path;
  Precision precision = Precision::kFp32;  // which GEMM: Sgemm or the bf16 one (gemm_bf16.h)
};

struct GemmPeak {
  double flops_per_s = 0;           // the MFU denominator: max(measured, cached)
  double measured_flops_per_s = 0;  // fastest call in this process: 2·n³ / best time
  double median_trial_flops_per_s = 0;  // median over trials of each trial's fastest call
  double cached_flops_per_s = 0;    // best earlier measurement for this key (0 = none)
  int trials = 0;
  int64_t n = 0;
  double seconds = 0;               // time spent measuring
  std::string cache_path;           // "" when no cache was used
  std::string key;                  // cache key: CPU model, threads, n, BLAS kernel (bf16 route)
  Precision precision = Precision::kFp32;
  // e.g. "151.2 GFLOP/s (best on this machine, cached in ~/.cache/replica/gemm-peak.json;
  // this process 98.1, median of 5 trials 90.3)".
  std::string Describe() const;
};

GemmPeak MeasureGemmPeak(const GemmPeakOptions& options = {});

// $REPLICA_GEMM_PEAK_CACHE when set ("off" disables), else $XDG_CACHE_HOME/replica/gemm-peak.json,
// else $HOME/.cache/replica/gemm-peak.json; "off" when none of these is known.
std::string DefaultGemmPeakCachePath();

struct NominalPeak {
  double flops_per_cycle_per_core = 0;  // of the unit that does the mode's math (table below)
  double clock_hz = 0;                  // clock.hz
  CoreClock clock;                      // measured on the calling thread, with its references
  int cores = 0;                        // threads in use
  double flops_per_s = 0;               // the product
};
// FLOP/cycle/core: fp32 (and emulated bf16) 32 on AVX2 (two 256-bit FMA pipes), 64 on AVX-512
// (two 512-bit FMA pipes), 32 on AMD's AVX-512 before Zen 5 (isa.h HalfWidthAvx512); bf16 twice
// the fp32 figure on oneDNN's AVX512-BF16 route (vdpbf16ps), 1024 on AMX (one 16×16×32 bf16 tile
// product per 16 cycles).
double FlopsPerCyclePerCore(Isa isa, Precision precision);
NominalPeak MeasureNominalPeak(Isa isa, Precision precision, int cores);

}  // namespace replica
