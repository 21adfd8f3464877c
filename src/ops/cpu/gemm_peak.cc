#include "ops/cpu/gemm_peak.h"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/threads.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_bf16.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

using Clock = std::chrono::steady_clock;

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string m = line.substr(colon + 1);
        m.erase(0, m.find_first_not_of(' '));
        return m;
      }
    }
  }
  return "unknown CPU";
}

// fp32 keys name the BLAS kernel; bf16 keys the bf16 GEMM route in use (onednn-amx,
// onednn-avx512bf16, emulated).
std::string CacheKey(int64_t n, Precision precision) {
  precision = MatmulOperands(precision);
  const char* core = openblas_get_corename();
  const std::string key = fmt::format("{} | {} threads | n {} | OpenBLAS {}", CpuModel(),
                                      NumThreads(), n, core ? core : "?");
  if (precision == Precision::kFp32) return key;
  return fmt::format("{} | bf16 {}", key, Bf16GemmRouteName(ActiveBf16GemmRoute()));
}

// The cache file as an object {key: {"flops_per_s": x, ...}}; empty when missing or unreadable
// (a cache never stops a run).
nlohmann::json ReadCache(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nlohmann::json::object();
  try {
    nlohmann::json j = nlohmann::json::parse(ReadFile(path));
    if (j.is_object()) return j;
  } catch (const std::exception&) {
  }
  return nlohmann::json::object();
}

}  // namespace

std::string DefaultGemmPeakCachePath() {
  if (const char* p = std::getenv("REPLICA_GEMM_PEAK_CACHE"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "replica" / "gemm-peak.json").string();
  if (const char* h = std::getenv("HOME"); h && *h)
    return (fs::path(h) / ".cache" / "replica" / "gemm-peak.json").string();
  return "off";
}

GemmPeak MeasureGemmPeak(const GemmPeakOptions& o) {
  Require(o.n >= 16 && o.trials >= 1 && o.trial_s >= 0 && o.pause_s >= 0,
          "GEMM peak: bad options (n {}, trials {})", o.n, o.trials);
  const int64_t n = o.n;
  const size_t nn = static_cast<size_t>(n * n);
  std::vector<float> a(nn), b(nn), c(nn);
  for (size_t i = 0; i < nn; ++i) {
    a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    b[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f - 0.5f;
  }
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  auto call = [&] {
    const auto t0 = Clock::now();
    Gemm(o.precision, false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const auto start = Clock::now();
  call();  // warm-up: first touch, thread start
  std::vector<double> trial_best;
  for (int t = 0; t < o.trials; ++t) {
    if (t > 0 && o.pause_s > 0)
      std::this_thread::sleep_for(std::chrono::duration<double>(o.pause_s));
    const auto t0 = Clock::now();
    double best = 1e30;
    int calls = 0;
    while (calls < 2 ||
           (std::chrono::duration<double>(Clock::now() - t0).count() < o.trial_s && calls < 50)) {
      best = std::min(best, call());
      ++calls;
    }
    trial_best.push_back(best);
  }
  GemmPeak p;
  p.n = n;
  p.trials = o.trials;
  p.precision = MatmulOperands(o.precision);
  p.measured_flops_per_s = flops / *std::min_element(trial_best.begin(), trial_best.end());
  std::nth_element(trial_best.begin(), trial_best.begin() + trial_best.size() / 2,
                   trial_best.end());
  p.median_trial_flops_per_s = flops / trial_best[trial_best.size() / 2];
  p.flops_per_s = p.measured_flops_per_s;
  p.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  const std::string path = o.cache_path.empty() ? DefaultGemmPeakCachePath() : o.cache_path;
  if (path == "off") return p;
  p.key = CacheKey(n, o.precision);
  nlohmann::json cache = ReadCache(path);
  if (cache.contains(p.key) && cache[p.key].is_object() && cache[p.key].contains("flops_per_s") &&
      cache[p.key]["flops_per_s"].is_number())
    p.cached_flops_per_s = cache[p.key]["flops_per_s"].get<double>();
  p.cache_path = path;
  p.flops_per_s = std::max(p.measured_flops_per_s, p.cached_flops_per_s);
  if (p.measured_flops_per_s > p.cached_flops_per_s) {
    cache[p.key] = {{"flops_per_s", p.measured_flops_per_s},
                    {"measured_at_unix_s", std::chrono::duration_cast<std::chrono::seconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count()}};
    try {  // best effort: an unwritable cache only means the next run measures again
      std::error_code ec;
      fs::create_directories(fs::path(path).parent_path(), ec);
      WriteFileAtomic(path, cache.dump(2) + "\n");
    } catch (const Error&) {
      p.cache_path += " (not writable)";
    }
  }
  return p;
}

std::string GemmPeak::Describe() const {
  const std::string here =
      fmt::format("{:.1f}, median of {} trials {:.1f}", measured_flops_per_s / 1e9, trials,
                  median_trial_flops_per_s / 1e9);
  if (cache_path.empty())
    return fmt::format(
        "{:.1f} GFLOP/s (fastest of {} trials of a {}^3 {} GEMM in this process; "
        "median {:.1f})",
        flops_per_s / 1e9, trials, n, PrecisionName(precision), median_trial_flops_per_s / 1e9);
  if (cached_flops_per_s > measured_flops_per_s)
    return fmt::format("{:.1f} GFLOP/s (best on this machine, cached in {}; this process {})",
                       flops_per_s / 1e9, cache_path, here);
  return fmt::format("{:.1f} GFLOP/s (measured now, a new best on this machine, cached in {}; {})",
                     flops_per_s / 1e9, cache_path, here);
}

double FlopsPerCyclePerCore(Isa isa, Precision precision) {
  precision = MatmulOperands(precision);
  if (isa == Isa::kAmx && precision == Precision::kBf16) return 1024;
  // AMD before Zen 5 runs a 512-bit instruction on both 256-bit pipes (isa.h HalfWidthAvx512).
  const double width = isa >= Isa::kAvx512 && DetectCpu().HalfWidthAvx512() ? 0.5 : 1.0;
  // vdpbf16ps: two bf16 products per fp32 lane, so twice the fp32 FMA rate.
  if (isa == Isa::kAvx512 && precision == Precision::kBf16 &&
      ActiveBf16GemmRoute() == Bf16GemmRoute::kOneDnn)
    return 128 * width;
  if (isa >= Isa::kAvx512) return 64 * width;
  if (isa == Isa::kAvx2) return 32;
  return 8;  // SSE: one 128-bit multiply and one add per cycle
}

NominalPeak MeasureNominalPeak(Isa isa, Precision precision, int cores) {
  NominalPeak p;
  p.flops_per_cycle_per_core = FlopsPerCyclePerCore(isa, precision);
  p.clock = MeasureCoreClock();
  p.clock_hz = p.clock.hz;
  p.cores = cores;
  p.flops_per_s = p.flops_per_cycle_per_core * p.clock_hz * cores;
  return p;
}

}  // namespace replica
