// Counted nouns for messages: Plural(1, "thread") is "1 thread", Plural(2, "thread") "2 threads",
// Plural(3, "micro-batch", "micro-batches") "3 micro-batches".
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace replica {

inline std::string Plural(int64_t n, std::string_view singular, std::string_view plural = {}) {
  std::string s = std::to_string(n) + " ";
  if (n == 1 || n == -1) return s.append(singular);
  if (!plural.empty()) return s.append(plural);
  return s.append(singular).append("s");
}

}  // namespace replica
