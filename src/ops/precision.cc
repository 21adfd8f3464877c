#include "ops/precision.h"

#include "core/error.h"
#include "core/precision_spelling.h"

namespace replica {

const char* PrecisionName(Precision p) { return p == Precision::kBf16 ? "bf16" : "fp32"; }

Precision ParsePrecision(const std::string& text, const std::string& what) {
  const std::string p = CanonicalPrecision(text);
  if (p == "fp32") return Precision::kFp32;
  if (p == "bf16") return Precision::kBf16;
  Fail("{}: expected {}, got '{}'", what, kPrecisionSpellings, text);
}

}  // namespace replica
