#include "core/human_count.h"

#include <fmt/format.h>

namespace replica {

std::string HumanCount(uint64_t n) {
  static constexpr const char* kSuffix[] = {"K", "M", "B", "T", "P", "E"};
  if (n < 1000) return std::to_string(n);
  double v = static_cast<double>(n);
  int i = -1;
  // Step up while the two-decimal form would read 1000.00 or more.
  while (i < 5 && v >= 999.995) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.2f} {}", v, kSuffix[i]);
}

std::string CountWithHuman(uint64_t n) {
  return n < 1000 ? std::to_string(n) : fmt::format("{} ({})", n, HumanCount(n));
}

}  // namespace replica
