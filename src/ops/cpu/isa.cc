#include "ops/cpu/isa.h"

#include <cpuid.h>
#include <dnnl.h>
#include <fmt/format.h>
#include <hwy/targets.h>

#include <mutex>
#include <optional>

#include "core/error.h"

namespace replica {
namespace {

uint64_t Xgetbv0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures Probe() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "Auth" "enti" "cAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const unsigned base_family = (a >> 8) & 0xf;
  f.family = static_cast<int>(base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family);
  const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = Xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;                     // SSE + AVX state
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;                   // + opmask, ZMM_Hi256, Hi16_ZMM
  const bool tile_state = (xcr0 & (3ull << 17)) == (3ull << 17);  // XTILECFG + XTILEDATA
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool avx2 = (b >> 5) & 1;
  const bool avx512 = ((b >> 16) & 1) && ((b >> 17) & 1) && ((b >> 30) & 1) && ((b >> 31) & 1);
  const bool amx_bf16 = ((d >> 22) & 1) && ((d >> 24) & 1);
  const unsigned max_sub = a;
  bool avx512_bf16 = false;
  if (max_sub >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    avx512_bf16 = (a >> 5) & 1;
  }
  f.avx2 = avx2 && fma && ymm_state;
  f.avx512 = f.avx2 && avx512 && zmm_state;
  f.avx512_bf16 = f.avx512 && avx512_bf16;
  f.amx_bf16 = f.avx512 && amx_bf16 && tile_state;
  return f;
}

std::mutex g_mu;
std::optional<Isa> g_cap;

}  // namespace

Isa CpuFeatures::Best() const {
  if (amx_bf16) return Isa::kAmx;
  if (avx512) return Isa::kAvx512;
  if (avx2) return Isa::kAvx2;
  return Isa::kBaseline;
}

const CpuFeatures& DetectCpu() {
  static const CpuFeatures f = Probe();
  return f;
}

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAmx:
      return "amx";
    case Isa::kBaseline:
      break;
  }
  return "baseline";
}

Isa ResolveIsa(const std::string& text, const std::string& what) {
  const Isa best = DetectCpu().Best();
  if (text == "auto") return best;
  Isa want;
  if (text == "avx2") {
    want = Isa::kAvx2;
  } else if (text == "avx512") {
    want = Isa::kAvx512;
  } else if (text == "amx") {
    want = Isa::kAmx;
  } else {
    Fail("{}: expected auto, avx2, avx512 or amx, got '{}'", what, text);
  }
  Require(want <= best, "{}: '{}' is not available on this CPU, whose best is '{}' ({})", what,
          text, IsaName(best), DescribeIsa());
  return want;
}

void ApplyIsaCap(Isa isa) {
  std::lock_guard<std::mutex> lock(g_mu);
  Require(isa <= DetectCpu().Best(), "ISA cap '{}' is above this CPU's best '{}'", IsaName(isa),
          IsaName(DetectCpu().Best()));
  if (g_cap) {
    Require(*g_cap == isa, "ISA cap '{}' requested after '{}' was applied in this process",
            IsaName(isa), IsaName(*g_cap));
    return;
  }
  g_cap = isa;
  if (isa == DetectCpu().Best()) return;  // nothing to take away
  dnnl_cpu_isa_t dnnl_isa = dnnl_cpu_isa_avx2;
  int64_t hwy_disabled = 0;
  switch (isa) {
    case Isa::kAmx:
      dnnl_isa = dnnl_cpu_isa_avx512_core_amx;
      break;
    case Isa::kAvx512:
      dnnl_isa = dnnl_cpu_isa_avx512_core_bf16;
      break;
    case Isa::kAvx2:
    case Isa::kBaseline:
      dnnl_isa = isa == Isa::kAvx2 ? dnnl_cpu_isa_avx2 : dnnl_cpu_isa_sse41;
      hwy_disabled = HWY_AVX3 | HWY_AVX3_DL;
#ifdef HWY_AVX3_ZEN4
      hwy_disabled |= HWY_AVX3_ZEN4;
#endif
#ifdef HWY_AVX3_SPR
      hwy_disabled |= HWY_AVX3_SPR;
#endif
      if (isa == Isa::kBaseline) hwy_disabled |= HWY_AVX2;
      break;
  }
  Require(dnnl_set_max_cpu_isa(dnnl_isa) == dnnl_success,
          "ISA cap '{}': oneDNN refused it (a oneDNN primitive already ran in this process)",
          IsaName(isa));
  if (hwy_disabled) hwy::DisableTargets(hwy_disabled);
}

Isa ActiveIsa() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_cap ? *g_cap : DetectCpu().Best();
}

bool HasBf16MatrixUnits() {
  return ActiveIsa() == Isa::kAmx;
}

std::string OneDnnIsaName() {
  switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return fmt::format("0x{:x}", static_cast<int>(dnnl_get_effective_cpu_isa()));
  }
}

std::string DescribeIsa() {
  const CpuFeatures& f = DetectCpu();
  auto yes = [](bool b, const char* name) { return fmt::format("{}{}", b ? "" : "no ", name); };
  return fmt::format("cpu {}{}, {}, {}, {}; using {}{}", f.amd ? "amd, " : "", yes(f.avx2, "avx2"),
                     yes(f.avx512, "avx512"), yes(f.avx512_bf16, "avx512_bf16"),
                     yes(f.amx_bf16, "amx_bf16"), IsaName(ActiveIsa()),
                     ActiveIsa() < f.Best() ? " (capped)" : "");
}

}  // namespace replica
