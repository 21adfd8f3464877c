#include "core/finite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "core/half.h"

namespace replica {

namespace {

// The first i with bad(data[i]), in blocks over the threads.
template <typename Bad>
std::optional<size_t> FirstWhere(const float* data, size_t n, Bad bad) {
  constexpr int64_t kBlock = 1 << 16;
  const int64_t blocks = (static_cast<int64_t>(n) + kBlock - 1) / kBlock;
  int64_t first = std::numeric_limits<int64_t>::max();
#pragma omp parallel for schedule(static) reduction(min : first) if (blocks > 4)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t end = std::min<int64_t>(static_cast<int64_t>(n), (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < end; ++i) {
      if (bad(data[i])) {
        first = std::min(first, i);
        break;
      }
    }
  }
  if (first == std::numeric_limits<int64_t>::max()) return std::nullopt;
  return static_cast<size_t>(first);
}

}  // namespace

std::optional<size_t> FirstNonFinite(const float* data, size_t n) {
  return FirstWhere(data, n, [](float x) { return !std::isfinite(x); });
}

std::optional<size_t> FirstBf16Overflow(const float* data, size_t n) {
  return FirstWhere(data, n, [](float x) {
    return std::isfinite(x) && !std::isfinite(Bf16ToF32(F32ToBf16(x)));
  });
}

void RequireFiniteTensor(const float* data, size_t n, const std::string& where,
                         const std::string& tensor) {
  const std::optional<size_t> bad = FirstNonFinite(data, n);
  if (!bad) return;
  const float v = data[*bad];
  Fail("{}: tensor '{}' holds {} at element {} (of {}): refusing non-finite values", where, tensor,
       std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"), *bad, n);
}

}  // namespace replica
