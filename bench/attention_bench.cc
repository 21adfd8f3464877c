// Attention forward and backward at the bench-S shape (H = KV = 8, hd = 64; batch 4 × seq 1024,
// and bench-S-long batch 1 × seq 4096), sliding window 512 and full causal, 1 and 2 threads.
// FLOP/s counts only visible (query, key) pairs: forward 4·hd per pair per head (q·k and p·v),
// backward 8·hd per pair (dP, dV, dK, dQ). The backward also recomputes q·k, i.e. does 10·hd of
// work per pair; that recompute is not counted.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "core/threads.h"
#include "ops/cpu/attention.h"

namespace {

using replica::AttentionShape;

struct Inputs {
  explicit Inputs(const AttentionShape& s)
      : q(s.B * s.T * s.H * s.hd),
        k(s.B * s.T * s.KV * s.hd),
        v(k.size()),
        out(q.size()),
        lse(s.B * s.H * s.T),
        dout(q.size()),
        dq(q.size()),
        dk(k.size()),
        dv(k.size()) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (auto* x : {&q, &k, &v, &dout}) {
      for (float& e : *x) e = dist(rng);
    }
  }
  std::vector<float> q, k, v, out, lse, dout, dq, dk, dv;
};

// Args: batch, seq, window, threads.
AttentionShape ShapeOf(const benchmark::State& state) {
  return AttentionShape{state.range(0), state.range(1), 8, 8, 64, state.range(2)};
}

double VisiblePairFlops(const AttentionShape& s, double flops_per_pair_per_dim) {
  return flops_per_pair_per_dim * s.hd * static_cast<double>(s.B * s.H) *
         static_cast<double>(replica::AttentionVisiblePairs(s.T, s.window));
}

void BM_AttentionForward(benchmark::State& state) {
  const AttentionShape s = ShapeOf(state);
  replica::SetNumThreads(static_cast<int>(state.range(3)));
  Inputs x(s);
  for (auto _ : state) {
    replica::AttentionForward(s, x.q.data(), x.k.data(), x.v.data(), x.out.data(), x.lse.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(VisiblePairFlops(s, 4), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AttentionBackward(benchmark::State& state) {
  const AttentionShape s = ShapeOf(state);
  replica::SetNumThreads(static_cast<int>(state.range(3)));
  Inputs x(s);
  replica::AttentionForward(s, x.q.data(), x.k.data(), x.v.data(), x.out.data(), x.lse.data());
  for (auto _ : state) {
    replica::AttentionBackward(s, x.q.data(), x.k.data(), x.v.data(), x.out.data(), x.lse.data(),
                               x.dout.data(), x.dq.data(), x.dk.data(), x.dv.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(VisiblePairFlops(s, 8), benchmark::Counter::kIsIterationInvariantRate);
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"B", "T", "window", "threads"});
  for (int64_t threads : {1, 2}) {
    for (int64_t window : {512, 0}) b->Args({4, 1024, window, threads});
    b->Args({1, 4096, 512, threads});  // bench-S-long: sliding cost grows linearly in T
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_AttentionForward)->Apply(Shapes);
BENCHMARK(BM_AttentionBackward)->Apply(Shapes);

}  // namespace
