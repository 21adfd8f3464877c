#include "core/precision_spelling.h"

#include <cctype>

namespace replica {

std::string CanonicalPrecision(const std::string& text) {
  std::string t;
  for (const unsigned char c : text) t.push_back(static_cast<char>(std::tolower(c)));
  if (t == "fp32" || t == "f32" || t == "float32" || t == "float") return "fp32";
  if (t == "bf16" || t == "bfloat16") return "bf16";
  return "";
}

}  // namespace replica
