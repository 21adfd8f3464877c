#include "eval/blocked_bloom.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace replica::eval {

BlockedBloom::BlockedBloom(size_t expected_keys, double bits_per_key) {
  const double bits = std::max(512.0, static_cast<double>(expected_keys) * bits_per_key);
  size_t n = 1;
  while (static_cast<double>(n) * 512.0 < bits) n <<= 1;
  Require(n <= (size_t{1} << 32), "Bloom filter for {} keys is too large", expected_keys);
  blocks_.assign(n, Block{});
  mask_ = n - 1;
}

void BlockedBloom::Insert(uint64_t fp) {
  Block& b = blocks_[BlockOf(fp)];
  uint64_t h = Remix(fp);
  for (int i = 0; i < kBits; ++i, h >>= 9) {
    const unsigned bit = static_cast<unsigned>(h & 511);
    b.w[bit >> 6] |= uint64_t{1} << (bit & 63);
  }
}

}  // namespace replica::eval
