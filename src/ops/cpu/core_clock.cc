#include "ops/cpu/core_clock.h"

#include <cpuid.h>
#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace replica {
namespace {

constexpr double kImulLatencyCycles = 3;   // imul r64, r64 (see core_clock.h)
constexpr int kChainUnroll = 32;           // multiplies per loop iteration
constexpr uint64_t kIterations = 1 << 15;  // ~1M multiplies, ~1 ms at 3 GHz
constexpr int kRepetitions = 24;
constexpr double kLowFactor = 0.75, kHighFactor = 1.25, kTurboFactor = 2.0;

// One repetition: kIterations × kChainUnroll dependent multiplies, in seconds. The multiplier and
// the start value are odd, so the value never becomes 0; the asm keeps the compiler from
// strength-reducing or hoisting the chain. The loop's dec/jnz is off the dependency chain and
// runs beside it.
double ChainSeconds() {
  uint64_t x = 1, n = kIterations;
  const uint64_t m = 0x9E3779B97F4A7C15ull;
  const auto t0 = std::chrono::steady_clock::now();
  __asm__ volatile(
      "1:\n"
      ".rept %c[unroll]\n"
      "imul %[m], %[x]\n"
      ".endr\n"
      "dec %[n]\n"
      "jnz 1b\n"
      : [x] "+r"(x), [n] "+r"(n)
      : [m] "r"(m), [unroll] "i"(kChainUnroll)
      : "cc");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Ghz(double hz) {
  return fmt::format("{:.2f} GHz", hz / 1e9);
}

}  // namespace

double MeasureCoreClockHz() {
  ChainSeconds();  // warm-up: lets a cpufreq governor raise the clock before the timed runs
  double best = 1e30;
  for (int rep = 0; rep < kRepetitions; ++rep) {
    // A short sleep first, so each repetition starts on a fresh scheduler slice when the machine
    // is loaded.
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    best = std::min(best, ChainSeconds());
  }
  return kImulLatencyCycles * kChainUnroll * static_cast<double>(kIterations) / best;
}

void CpuidFrequencyHz(double* base_hz, double* max_hz) {
  *base_hz = 0;
  *max_hz = 0;
  if (__get_cpuid_max(0, nullptr) < 0x16) return;
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(0x16, a, b, c, d);
  *base_hz = static_cast<double>(a & 0xffff) * 1e6;
  *max_hz = static_cast<double>(b & 0xffff) * 1e6;
  if (*max_hz < *base_hz) *max_hz = 0;  // an inconsistent maximum is treated as not reported
}

double CpuinfoFrequencyHz() {
  std::ifstream in("/proc/cpuinfo");
  const int cpu = sched_getcpu();
  std::string line;
  int processor = -1;
  double first = 0;
  auto value = [](const std::string& l) {
    const size_t colon = l.find(':');
    return colon == std::string::npos ? 0.0 : std::strtod(l.c_str() + colon + 1, nullptr);
  };
  while (std::getline(in, line)) {
    if (line.rfind("processor", 0) == 0) {
      processor = static_cast<int>(value(line));
    } else if (line.rfind("cpu MHz", 0) == 0) {
      const double hz = value(line) * 1e6;
      if (hz <= 0) continue;
      if (processor == cpu) return hz;
      if (first == 0) first = hz;
    }
  }
  return first;
}

CoreClock ChooseCoreClock(double measured_hz, double cpuid_base_hz, double cpuid_max_hz,
                          double cpuinfo_hz) {
  CoreClock c;
  c.measured_hz = measured_hz;
  c.cpuid_base_hz = cpuid_base_hz;
  c.cpuid_max_hz = cpuid_max_hz;
  c.cpuinfo_hz = cpuinfo_hz;
  c.hz = measured_hz;
  c.source = CoreClock::kMeasured;
  const bool cpuid = cpuid_base_hz > 0;
  const double reference = cpuid ? cpuid_base_hz : cpuinfo_hz;
  if (reference <= 0) {
    c.note = "no reference clock (cpuid 0x16, /proc/cpuinfo) to check the measurement against";
    return c;
  }
  const char* reference_name = cpuid ? CoreClock::kCpuid : CoreClock::kCpuinfo;
  const double ceiling = cpuid && cpuid_max_hz > 0 ? cpuid_max_hz : kTurboFactor * reference;
  const double low = kLowFactor * reference, high = kHighFactor * ceiling;
  if (measured_hz >= low && measured_hz <= high) return c;
  c.hz = reference;
  c.source = reference_name;
  c.note = fmt::format(
      "the measured {} is outside [{}, {}] (0.75 x the {} clock, 1.25 x {}), so the {} clock "
      "is used",
      Ghz(measured_hz), Ghz(low), Ghz(high), reference_name,
      cpuid && cpuid_max_hz > 0 ? "its maximum" : "2 x it", reference_name);
  return c;
}

CoreClock MeasureCoreClock() {
  const double measured = MeasureCoreClockHz();
  double base = 0, max = 0;
  CpuidFrequencyHz(&base, &max);
  return ChooseCoreClock(measured, base, max, CpuinfoFrequencyHz());
}

std::string CoreClock::Describe() const {
  std::string s = source == kMeasured
                      ? fmt::format("{} measured (imul chain)", Ghz(hz))
                      : fmt::format("{} from {} (measured {})", Ghz(hz), source, Ghz(measured_hz));
  s += fmt::format("; {} {}, {} {}", kCpuinfo, cpuinfo_hz > 0 ? Ghz(cpuinfo_hz) : "absent", kCpuid,
                   cpuid_base_hz <= 0 ? std::string("not reported")
                   : cpuid_max_hz > 0
                       ? fmt::format("base {}, max {}", Ghz(cpuid_base_hz), Ghz(cpuid_max_hz))
                       : fmt::format("base {}", Ghz(cpuid_base_hz)));
  if (!note.empty()) s += " (" + note + ")";
  return s;
}

}  // namespace replica
