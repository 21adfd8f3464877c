// What a matmul is fed (docs/precision.md). kFp32: fp32 operands, the exact default. kBf16: both
// operands rounded to bfloat16 (round to nearest even) and multiplied with fp32 accumulation, as
// OLMo-core's bf16 recipe feeds every matmul; everything else (norms, RoPE, softmax, loss,
// gradients, optimizer) stays fp32 in both modes.
#pragma once
#include <string>

namespace replica {

enum class Precision { kFp32, kBf16 };

// "fp32" | "bf16".
const char* PrecisionName(Precision p);
// Any spelling of core/precision_spelling.h; Error naming `what` (a config key or flag) and the
// accepted spellings otherwise.
Precision ParsePrecision(const std::string& text, const std::string& what);

}  // namespace replica
