#include "ops/precision.h"

#include "core/error.h"

namespace replica {

const char* PrecisionName(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

Precision ParsePrecision(const std::string& text, const std::string& what) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  Fail("{}: expected fp32 or bf16, got '{}'", what, text);
}

}  // namespace replica
