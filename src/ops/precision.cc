#include "ops/precision.h"

#include <cctype>

#include "core/error.h"
#include "core/precision_spelling.h"

namespace replica {

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16: return "bf16";
    case Precision::kBf16Fsdp: return "bf16-fsdp";
    case Precision::kFp32: break;
  }
  return "fp32";
}

Precision ParsePrecision(const std::string& text, const std::string& what) {
  const std::string p = CanonicalPrecision(text);
  if (p == "fp32") return Precision::kFp32;
  if (p == "bf16") return Precision::kBf16;
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "bf16-fsdp") return Precision::kBf16Fsdp;
  Fail("{}: expected {}, or bf16-fsdp, got '{}'", what, kPrecisionSpellings, text);
}

}  // namespace replica
