#include "ops/cpu/cpu_device.h"

#include <cblas.h>
#include <fmt/format.h>

#include "ops/cpu/fsdp_bf16.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/gemm_peak.h"
#include "ops/cpu/isa.h"

namespace replica {
namespace {

nlohmann::json SettingsJson(Precision precision, Isa isa) {
  const CpuFeatures& f = DetectCpu();
  nlohmann::json j = {{"precision", PrecisionName(precision)},
                      {"isa", IsaName(isa)},
                      {"bf16_matmul", Bf16GemmRouteKey(ActiveBf16GemmRoute())},
                      {"cpu",
                       {{"avx2", f.avx2},
                        {"avx512", f.avx512},
                        {"avx512_bf16", f.avx512_bf16},
                        {"amx_bf16", f.amx_bf16},
                        {"amd", f.amd}}}};
  if (precision == Precision::kBf16Fsdp) j["torch_cpu"] = TorchCpuPathName(TorchCpuPathInUse());
  return j;
}

// Only the route the precision uses: fp32 runs every matmul through OpenBLAS sgemm and never
// touches the bf16 route.
std::string SettingsLine(Precision precision) {
  if (precision == Precision::kFp32) {
    const char* core = openblas_get_corename();
    return fmt::format("precision fp32, {}; fp32 matmuls OpenBLAS sgemm ({})", DescribeIsa(),
                       core ? core : "?");
  }
  if (precision == Precision::kBf16Fsdp)
    return fmt::format("precision bf16-fsdp, {}; torch's {} CPU kernels followed",
                       DescribeIsa(), TorchCpuPathName(TorchCpuPathInUse()));
  return fmt::format("precision {}, {}; bf16 matmuls {}", PrecisionName(precision), DescribeIsa(),
                     Bf16GemmRouteName(ActiveBf16GemmRoute()));
}

class Cpu final : public Device {
 public:
  const char* name() const override { return "cpu"; }

  ComputeSettings Configure(const ComputeRequest& request) const override {
    const Precision precision = request.precision;
    const Isa isa = ResolveIsa(request.isa, request.isa_what);
    const TorchCpuPath torch_cpu = ResolveTorchCpuPath(request.torch_cpu, request.torch_cpu_what);
    ApplyIsaCap(isa);
    SetTorchCpuPath(torch_cpu);
    ComputeSettings s;
    s.precision = precision;
    s.isa = IsaName(isa);
    if (precision == Precision::kBf16Fsdp) s.torch_cpu = TorchCpuPathName(torch_cpu);
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
