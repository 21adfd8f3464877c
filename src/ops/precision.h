// A run's compute precision (docs/precision.md). kFp32: fp32 everywhere, the exact default. kBf16:
// every matmul's operands rounded to bfloat16 (round to nearest even) and multiplied with fp32
// accumulation, everything else (norms, RoPE, softmax, loss, gradients, optimizer) fp32.
// kBf16Fsdp: what OLMo-core's FSDP mixed precision (param_dtype bfloat16, reduce_dtype float32)
// computes in torch: the kBf16 matmuls, and every parameter, activation and activation gradient a
// bf16 value, rounded where torch rounds its bf16 tensors (ops/cpu/fsdp_bf16.h); the master
// weights, the optimizer and the sums of weight gradients over micro-batches stay fp32.
#pragma once
#include <string>

namespace replica {

enum class Precision { kFp32, kBf16, kBf16Fsdp };

// What a matmul's operands are under `p`: kFp32, or kBf16 for both bf16 modes.
constexpr Precision MatmulOperands(Precision p) {
  return p == Precision::kFp32 ? Precision::kFp32 : Precision::kBf16;
}

// "fp32" | "bf16" | "bf16-fsdp".
const char* PrecisionName(Precision p);
// Any spelling of core/precision_spelling.h, or "bf16-fsdp" (any letter case; a compute mode, not a
// storage type, so convert --dtype does not take it); Error naming `what` (a config key or flag)
// and the accepted spellings otherwise.
Precision ParsePrecision(const std::string& text, const std::string& what);

}  // namespace replica
