// The CPU's instruction sets as replica uses them, and the cap a run puts on them (the CPU analog
// of choosing a chip generation; docs/precision.md).
//   avx2    AVX2 + FMA: fp32 GEMMs; bf16 matmuls are emulated (inputs rounded to bf16, fp32 GEMM)
//   avx512  AVX-512 (F, BW, VL, DQ): wider fp32 kernels; bf16 matmuls run on oneDNN's
//           AVX512-BF16 kernels on AMD CPUs that have them (faster than fp32 GEMM there), else
//           emulated (on Intel's, oneDNN 2.6's AVX512-BF16 matmul is slower than fp32 GEMM)
//   amx     AMX-BF16 tiles: bf16 matmuls run on oneDNN's AMX kernels
// Detection reads cpuid and the OS-enabled register state (xgetbv), so it does not depend on any
// cap. A cap is applied once per process, before the first oneDNN primitive: oneDNN's
// dnnl_set_max_cpu_isa and Highway's DisableTargets. OpenBLAS picks its kernels when it loads
// (OPENBLAS_CORETYPE), which a cap cannot change.
#pragma once
#include <string>

namespace replica {

enum class Isa { kBaseline = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

struct CpuFeatures {
  bool avx2 = false;         // AVX2 + FMA, OS-enabled
  bool avx512 = false;       // AVX-512 F, BW, VL, DQ, OS-enabled
  bool avx512_bf16 = false;  // AVX512_BF16 (vdpbf16ps)
  bool amx_bf16 = false;     // AMX-TILE + AMX-BF16, OS-enabled tile state
  bool amd = false;          // vendor "AuthenticAMD"
  int family = 0;            // cpuid 1 display family (base + extended): 0x19 Zen 3/4, 0x1A Zen 5
  // AVX-512 on 256-bit datapaths (AMD before Zen 5): one 512-bit FMA or vdpbf16ps per cycle, as
  // many FLOP per cycle as AVX2 (measured on a Zen 4 EPYC: 12 independent chains, 1.00 per cycle).
  bool HalfWidthAvx512() const { return amd && family < 0x1a; }
  Isa Best() const;
};

// The CPU this process runs on (cached after the first call).
const CpuFeatures& DetectCpu();
// "avx2", "avx512", "amx"; kBaseline is "baseline" (below AVX2).
const char* IsaName(Isa isa);
// The requested cap: "auto" means the CPU's best. Error naming `what` for an unknown name or an
// ISA this CPU lacks (with what it has).
Isa ResolveIsa(const std::string& text, const std::string& what);

// Caps the process at `isa` (<= DetectCpu().Best()). The first call sets it; later calls with the
// same value are no-ops, with another value an Error (oneDNN accepts one cap per process).
void ApplyIsaCap(Isa isa);
// The ISA in use: the cap if one was applied, else the CPU's best.
Isa ActiveIsa();
// True when bf16 matmuls run on matrix units (AMX) rather than being emulated.
bool HasBf16MatrixUnits();
// oneDNN's effective ISA in its own words (e.g. "avx2", "avx512_core_amx"); reading it fixes
// oneDNN's cap, so call it after ApplyIsaCap.
std::string OneDnnIsaName();
// One line for logs: the CPU's features, the cap and the ISA in use.
std::string DescribeIsa();

}  // namespace replica
