#include "ops/cpu/cpu_device.h"

#include <cblas.h>
#include <fmt/format.h>

#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/gemm_peak.h"
#include "ops/cpu/isa.h"

namespace replica {
namespace {

nlohmann::json SettingsJson(Precision precision, Isa isa) {
  const CpuFeatures& f = DetectCpu();
  return {{"precision", PrecisionName(precision)},
          {"isa", IsaName(isa)},
          {"bf16_matmul", Bf16GemmRouteKey(ActiveBf16GemmRoute())},
          {"cpu",
           {{"avx2", f.avx2},
            {"avx512", f.avx512},
            {"avx512_bf16", f.avx512_bf16},
            {"amx_bf16", f.amx_bf16},
            {"amd", f.amd}}}};
}

// Only the route the precision uses: fp32 runs every matmul through OpenBLAS sgemm and never
// touches the bf16 route.
std::string SettingsLine(Precision precision) {
  if (precision == Precision::kFp32) {
    const char* core = openblas_get_corename();
    return fmt::format("precision fp32, {}; fp32 matmuls OpenBLAS sgemm ({})", DescribeIsa(),
                       core ? core : "?");
  }
  return fmt::format("precision {}, {}; bf16 matmuls {}", PrecisionName(precision), DescribeIsa(),
                     Bf16GemmRouteName(ActiveBf16GemmRoute()));
}

class Cpu final : public Device {
 public:
  const char* name() const override { return "cpu"; }

  ComputeSettings Configure(Precision precision, const std::string& cap,
                            const std::string& what) const override {
    const Isa isa = ResolveIsa(cap, what);
    ApplyIsaCap(isa);
    ComputeSettings s;
    s.precision = precision;
    s.isa = IsaName(isa);
    s.json = SettingsJson(precision, isa);
    s.description = SettingsLine(precision);
    return s;
  }

  PeakRate MeasurePeak(Precision precision, int64_t n) const override {
    GemmPeakOptions options;
    options.n = n;
    options.precision = precision;
    const GemmPeak peak = MeasureGemmPeak(options);
    return {peak.flops_per_s, peak.Describe()};
  }

  NominalRate MeasureNominalPeak(Precision precision, int cores) const override {
    const NominalPeak p = replica::MeasureNominalPeak(ActiveIsa(), precision, cores);
    return {p.flops_per_s, p.flops_per_cycle_per_core, p.clock_hz, p.cores, p.clock.Describe()};
  }
};

}  // namespace

const Device& CpuDevice() {
  static const Cpu device;
  return device;
}

}  // namespace replica
