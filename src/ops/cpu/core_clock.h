// The core clock that the nominal peak (gemm_peak.h NominalPeak) multiplies FLOP/cycle/core by.
//
// MeasureCoreClockHz times a dependent chain of 64-bit integer multiplies on the calling thread: a
// multiply cannot be folded or eliminated at rename (a chain of `add $1, reg` can be, e.g. on
// Golden Cove, where it reads several adds per cycle), and `imul r64, r64` has a latency of 3
// cycles on every Intel core since Sandy Bridge and every AMD core since Zen (Agner Fog's tables,
// uops.info). Cores with a slower multiplier (Bulldozer family: 6 cycles; some Atom cores: 5) read
// low, and so does a vCPU that is time-sliced during every repetition; the check below catches
// both.
//
// MeasureCoreClock sets the measurement beside what the CPU and the OS report: cpuid leaf 0x16
// (base and maximum MHz; Intel only, 0 or absent on AMD and under many hypervisors) and the
// "cpu MHz" line of /proc/cpuinfo for the CPU the thread runs on (the current clock with a cpufreq
// driver, the TSC rate under KVM). The reference is cpuid's base when reported, else /proc/cpuinfo.
// The measurement is used when it lies in [0.75 × reference, 1.25 × ceiling], the ceiling being
// cpuid's maximum when reported and else 2 × the reference (turbo clocks of current server parts
// reach about 1.9× base, e.g. 2.0 → 3.8 GHz); outside that window the reference is used and `note`
// says why. `source` names the figure used.
#pragma once
#include <string>

namespace replica {

struct CoreClock {
  double hz = 0;             // the clock used: measured_hz, or the reference (see source)
  double measured_hz = 0;    // the imul chain: 3 cycles per multiply / best repetition time
  double cpuid_base_hz = 0;  // cpuid 0x16 EAX (0 = not reported)
  double cpuid_max_hz = 0;   // cpuid 0x16 EBX (0 = not reported)
  double cpuinfo_hz = 0;     // /proc/cpuinfo "cpu MHz" (0 = absent)
  std::string source;        // kMeasured, kCpuid or kCpuinfo
  std::string note;          // "" when the measurement was checked and used; else why not, or
                             // that there was no reference to check it against
  // e.g. "3.52 GHz measured (imul chain); /proc/cpuinfo 2.60 GHz, cpuid 0x16 not reported".
  std::string Describe() const;

  static constexpr const char* kMeasured = "measured";
  static constexpr const char* kCpuid = "cpuid 0x16";
  static constexpr const char* kCpuinfo = "/proc/cpuinfo";
};

// The dependent imul chain on the calling thread: the fastest of several ~1 ms repetitions
// (load only ever slows a repetition down), ~30 ms in all.
double MeasureCoreClockHz();

// The measurement, the references this machine reports, and the choice between them.
CoreClock MeasureCoreClock();

// The choice alone (0 = not reported), as MeasureCoreClock makes it.
CoreClock ChooseCoreClock(double measured_hz, double cpuid_base_hz, double cpuid_max_hz,
                          double cpuinfo_hz);

// cpuid leaf 0x16 base and maximum frequency in Hz (0 when the leaf is absent or reports 0).
void CpuidFrequencyHz(double* base_hz, double* max_hz);
// /proc/cpuinfo "cpu MHz" in Hz for the CPU the calling thread runs on (the first entry when that
// CPU is not found); 0 when there is no such line.
double CpuinfoFrequencyHz();

}  // namespace replica
