// The spellings of a floating-point precision that replica accepts wherever one is given (--precision,
// compute.precision, convert --dtype): fp32, f32, float32 (and torch's float) for 32-bit floats;
// bf16, bfloat16 for bfloat16. Letter case does not matter. One parser, so that no command accepts
// a spelling another refuses.
#pragma once
#include <string>

namespace replica {

// "fp32" or "bf16" for an accepted spelling, "" for any other text.
std::string CanonicalPrecision(const std::string& text);

// The accepted spellings, for messages: "fp32 (or f32, float32) or bf16 (or bfloat16)".
inline constexpr const char* kPrecisionSpellings = "fp32 (or f32, float32) or bf16 (or bfloat16)";

}  // namespace replica
