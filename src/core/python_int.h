// The magnitude of a Python integer written in decimal, as random.Random(seed) uses it (abs(seed)):
// an optional '-', then digits, the magnitude below 2^64. nullopt for anything else ("1.5",
// "abc", "", "-", "+3", a larger integer).
#pragma once
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

namespace replica {

inline std::optional<uint64_t> PythonIntMagnitude(std::string_view text) {
  const size_t a = !text.empty() && text[0] == '-' ? 1 : 0;
  if (a == text.size() || text[a] < '0' || text[a] > '9') return std::nullopt;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data() + a, text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace replica
