// Contamination-scan throughput (target: >= 100 million training tokens per second per core, one
// probe per s tokens, uint32 tokens in memory / page cache). The index holds realistic eval sets:
// 1,000 perplexity documents of 512 tokens (13-grams, stride 8) and 2,000 question + answer items
// of 48 tokens (8-grams, stride 4), i.e. ~560k indexed n-grams. The training stream is 32M random
// ids (never matching, so this measures the probe path: hash, Bloom lookup) plus 64 injected
// items (so the verify-and-extend path is exercised too). Single thread: the figure is per core.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "eval/decon.h"

namespace replica::eval {
namespace {

struct Fixture {
  std::unique_ptr<NgramIndex> index;
  std::vector<uint32_t> stream;
  Fixture() {
    std::mt19937_64 rng(1);
    std::vector<IndexedItem> items;
    auto random = [&](size_t n) {
      std::vector<uint32_t> v(n);
      for (auto& x : v) x = static_cast<uint32_t>(rng() % 100256);
      return v;
    };
    for (int i = 0; i < 1000; ++i) items.push_back({"ppl", "p" + std::to_string(i), 13, random(512)});
    for (int i = 0; i < 2000; ++i) items.push_back({"mc", "m" + std::to_string(i), 8, random(48)});
    index = std::make_unique<NgramIndex>(std::move(items), std::vector<NgramIndex::TableSpec>{{13, 8}, {8, 4}});
    stream = random(size_t{32} << 20);
    for (int k = 0; k < 64; ++k) {
      const auto& it = index->items()[(k * 37) % index->items().size()];
      std::copy(it.tokens.begin(), it.tokens.end(), stream.begin() + k * (stream.size() / 64) + 1000);
    }
  }
};

Fixture& Shared() {
  static Fixture f;
  return f;
}

// Both tables (13-gram/8 and 8-gram/4): 3/8 probe per token.
void BM_DeconScanMemory(benchmark::State& state) {
  Fixture& f = Shared();
  size_t matches = 0;
  for (auto _ : state) {
    std::vector<Match> m = ScanStream(*f.index, f.stream.data(), f.stream.size());
    matches = m.size();
    benchmark::DoNotOptimize(m.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.stream.size()));
  state.counters["matches"] = static_cast<double>(matches);
  state.counters["index_ngrams"] = static_cast<double>(f.index->num_ngrams());
  state.counters["bloom_MiB"] = f.index->bloom_bytes() / 1048576.0;
}
BENCHMARK(BM_DeconScanMemory)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The same stream written to a uint32 file and scanned with ScanTokenFiles on one thread (mmap,
// page cache warm after the first iteration).
void BM_DeconScanFile(benchmark::State& state) {
  Fixture& f = Shared();
  const std::string path = std::filesystem::temp_directory_path() / "replica_decon_bench.npy";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(f.stream.data()), f.stream.size() * 4);
  omp_set_num_threads(1);
  ScanTokenFiles(*f.index, {path});  // warm the page cache
  double scan = 0, cpu = 0;
  for (auto _ : state) {
    DeconReport r = ScanTokenFiles(*f.index, {path});
    scan += r.scan_seconds;
    cpu += r.cpu_seconds;
    benchmark::DoNotOptimize(r.hits.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(f.stream.size()));
  // Wall time suffers from other processes on a shared machine; CPU time of the scan does not.
  state.counters["scan_tokens_per_s"] = state.iterations() * static_cast<double>(f.stream.size()) / scan;
  state.counters["scan_tokens_per_cpu_s"] = state.iterations() * static_cast<double>(f.stream.size()) / cpu;
  std::filesystem::remove(path);
}
BENCHMARK(BM_DeconScanFile)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace
}  // namespace replica::eval
