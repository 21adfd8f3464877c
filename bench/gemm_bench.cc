// The GEMM routes side by side, so a machine's bf16 route can be chosen by measurement
// (docs/precision.md): fp32 Sgemm (deterministic tiles over OpenBLAS), bf16 emulated (operands
// rounded to bf16 into fp32 scratch, then Sgemm), oneDNN f32 matmul on the rounded operands, and
// oneDNN's bf16 matmul (AMX or AVX512-BF16, skipped where this CPU has neither) converting both
// operands per call, the same with B a weight whose bf16 copy is made once (ops/cpu/bf16_weights.h:
// what the model's linear layers get inside a training step), the same tiles on operands converted
// beforehand (the route without conversions), and oneDNN's own matmul, one primitive over the whole
// problem threaded by oneDNN, on operands converted beforehand (the ceiling the route is held to).
// Shapes: 2048³ (the GEMM peak replica measures) and bench-S's training GEMMs (4 × 1024 tokens,
// d 512, MLP 1408, vocabulary 8192) in the layout the model calls them: forward x Wᵀ (op 1: the
// q/k/v/o, MLP up and down projections, the LM head) and the weight gradient dyᵀ x (op 2, K =
// tokens). FLOP/s counts 2·M·N·K per call.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <vector>

#include <dnnl.hpp>

#include "core/threads.h"
#include "ops/cpu/bf16_round.h"
#include "ops/cpu/bf16_weights.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_bf16.h"

namespace {

enum Route : int64_t {
  kFp32 = 0,
  kBf16Emulated = 1,
  kOneDnnF32 = 2,
  kOneDnnBf16 = 3,
  kOneDnnBf16Weight = 4,
  kOneDnnBf16Preconverted = 5,
  kOneDnnRaw = 6
};
const char* const kRouteNames[] = {"fp32",
                                   "bf16-emulated",
                                   "onednn-f32-rounded",
                                   "onednn-bf16",
                                   "onednn-bf16-weight-cached",
                                   "onednn-bf16-preconverted",
                                   "onednn-raw-matmul-preconverted"};
enum Op : int64_t { kNN = 0, kNT = 1, kTN = 2 };

// oneDNN's matmul over the whole problem (its own threading), bf16 operands, f32 result.
struct RawMatmul {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::matmul matmul;
  dnnl::memory a, b, c;
  RawMatmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, uint16_t* A, uint16_t* B,
            float* C) {
    using dims = dnnl::memory::dims;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc ad(dims{M, K}, dt::bf16, ta ? dims{1, M} : dims{K, 1});
    const dnnl::memory::desc bd(dims{K, N}, dt::bf16, tb ? dims{1, K} : dims{N, 1});
    const dnnl::memory::desc cd(dims{M, N}, dt::f32, dims{N, 1});
    matmul = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), engine));
    a = dnnl::memory(ad, engine, A);
    b = dnnl::memory(bd, engine, B);
    c = dnnl::memory(cd, engine, C);
  }
  void Run() {
    matmul.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
};

void BM_Gemm(benchmark::State& state) {
  const auto route = static_cast<Route>(state.range(0));
  const int64_t M = state.range(1), N = state.range(2), K = state.range(3);
  replica::SetNumThreads(static_cast<int>(state.range(4)));
  const auto op = static_cast<Op>(state.range(5));
  const bool ta = op == kTN, tb = op == kNT;
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  state.SetLabel(kRouteNames[route]);
  if (route >= kOneDnnBf16 && !replica::OneDnnBf16MatmulAvailable()) {
    state.SkipWithError("no oneDNN bf16 matmul on this CPU");
    return;
  }
  std::vector<float> a(M * K), b(K * N), c(M * N);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  std::vector<uint16_t> a16(a.size()), b16(b.size());
  replica::ConvertToBf16(a.data(), 1, a16.data(), 1, 1, static_cast<int64_t>(a.size()));
  replica::ConvertToBf16(b.data(), 1, b16.data(), 1, 1, static_cast<int64_t>(b.size()));
  std::unique_ptr<RawMatmul> raw;
  if (route == kOneDnnRaw) raw = std::make_unique<RawMatmul>(ta, tb, M, N, K, a16.data(),
                                                             b16.data(), c.data());
  const replica::Bf16WeightScope scope;  // used by kOneDnnBf16Weight only
  for (auto _ : state) {
    switch (route) {
      case kFp32:
        replica::Sgemm(ta, tb, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), N);
        break;
      case kBf16Emulated:
        replica::GemmBf16Emulated(ta, tb, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                                  c.data(), N);
        break;
      case kOneDnnF32:
      case kOneDnnBf16:
        replica::GemmBf16OneDnn(route == kOneDnnBf16, ta, tb, M, N, K, 1.0f, a.data(), lda,
                                b.data(), ldb, 0.0f, c.data(), N);
        break;
      case kOneDnnBf16Weight:
        replica::GemmBf16OneDnn(true, ta, tb, M, N, K, 1.0f, a.data(), lda, b.data(), ldb, 0.0f,
                                c.data(), N, replica::GemmB::kWeight);
        break;
      case kOneDnnBf16Preconverted:
        replica::GemmBf16OneDnnPreconverted(ta, tb, M, N, K, 1.0f, a16.data(), lda, b16.data(),
                                            ldb, 0.0f, c.data(), N);
        break;
      case kOneDnnRaw:
        raw->Run();
        break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * M * N * K,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"route", "M", "N", "K", "threads", "op"});
  for (int64_t threads : {1, 2}) {
    for (int64_t route : {kFp32, kBf16Emulated, kOneDnnF32, kOneDnnBf16, kOneDnnBf16Weight,
                          kOneDnnBf16Preconverted, kOneDnnRaw}) {
      b->Args({route, 2048, 2048, 2048, threads, kNN});
      b->Args({route, 4096, 512, 512, threads, kNT});    // bench-S q/k/v/o projection
      b->Args({route, 4096, 1408, 512, threads, kNT});   // bench-S MLP gate/up projection
      b->Args({route, 4096, 512, 1408, threads, kNT});   // bench-S MLP down projection
      b->Args({route, 4096, 8192, 512, threads, kNT});   // bench-S LM head
      b->Args({route, 1408, 512, 4096, threads, kTN});   // bench-S gate/up weight gradient
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);
}

BENCHMARK(BM_Gemm)->Apply(Shapes);

}  // namespace
