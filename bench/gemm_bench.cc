// The GEMM routes side by side, so a machine's bf16 route can be chosen by measurement
// (docs/precision.md): fp32 Sgemm (deterministic tiles over OpenBLAS), bf16 emulated (operands
// rounded to bf16 into fp32 scratch, then Sgemm), oneDNN f32 matmul on the rounded operands, and
// oneDNN's bf16 matmul (AMX or AVX512-BF16, skipped where this CPU has neither). Shapes: 2048³
// (the GEMM peak replica measures) and two of bench-S's training GEMMs (4 × 1024 tokens, d 512):
// the MLP up projection and the LM head. FLOP/s counts 2·M·N·K per call.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/threads.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_bf16.h"

namespace {

enum Route : int64_t { kFp32 = 0, kBf16Emulated = 1, kOneDnnF32 = 2, kOneDnnBf16 = 3 };
const char* const kRouteNames[] = {"fp32", "bf16-emulated", "onednn-f32-rounded", "onednn-bf16"};

void BM_Gemm(benchmark::State& state) {
  const auto route = static_cast<Route>(state.range(0));
  const int64_t M = state.range(1), N = state.range(2), K = state.range(3);
  replica::SetNumThreads(static_cast<int>(state.range(4)));
  state.SetLabel(kRouteNames[route]);
  if (route == kOneDnnBf16 && !replica::OneDnnBf16MatmulAvailable()) {
    state.SkipWithError("no oneDNN bf16 matmul on this CPU");
    return;
  }
  std::vector<float> a(M * K), b(K * N), c(M * N);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  for (auto _ : state) {
    switch (route) {
      case kFp32:
        replica::Sgemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N);
        break;
      case kBf16Emulated:
        replica::GemmBf16Emulated(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f,
                                  c.data(), N);
        break;
      case kOneDnnF32:
      case kOneDnnBf16:
        replica::GemmBf16OneDnn(route == kOneDnnBf16, false, false, M, N, K, 1.0f, a.data(), K,
                                b.data(), N, 0.0f, c.data(), N);
        break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * M * N * K,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"route", "M", "N", "K", "threads"});
  for (int64_t threads : {1, 2}) {
    for (int64_t route : {kFp32, kBf16Emulated, kOneDnnF32, kOneDnnBf16}) {
      b->Args({route, 2048, 2048, 2048, threads});
      b->Args({route, 4096, 1408, 512, threads});  // bench-S MLP up projection
      b->Args({route, 4096, 8192, 512, threads});  // bench-S LM head
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}

BENCHMARK(BM_Gemm)->Apply(Shapes);

}  // namespace
