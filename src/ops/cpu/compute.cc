#include "ops/cpu/compute.h"

#include <cblas.h>
#include <fmt/format.h>

#include "ops/cpu/gemm_bf16.h"

namespace replica {

nlohmann::json ComputeSettings::ToJson() const {
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

std::string ComputeSettings::Describe() const {
  // Only the route the command's precision uses: fp32 runs every matmul through OpenBLAS sgemm
  // and never touches the bf16 route.
  if (precision == Precision::kFp32) {
    const char* core = openblas_get_corename();
    return fmt::format("precision fp32, {}; fp32 matmuls OpenBLAS sgemm ({})", DescribeIsa(),
                       core ? core : "?");
  }
  return fmt::format("precision {}, {}; bf16 matmuls {}", PrecisionName(precision), DescribeIsa(),
                     Bf16GemmRouteName(ActiveBf16GemmRoute()));
}

ComputeSettings ConfigureCompute(const std::string& precision, const std::string& isa,
                                 const std::string& precision_what, const std::string& isa_what) {
  ComputeSettings s;
  s.precision = ParsePrecision(precision, precision_what);
  s.isa = ResolveIsa(isa, isa_what);
  ApplyIsaCap(s.isa);
  return s;
}

}  // namespace replica
