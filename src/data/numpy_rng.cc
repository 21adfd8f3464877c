#include "data/numpy_rng.h"

#include <utility>

#include "core/error.h"

namespace replica::data {
namespace {

constexpr uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875;
constexpr uint32_t kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr uint32_t kMixMultL = 0xca01f9dd, kMixMultR = 0x4973f715;
constexpr int kXShift = 16;
constexpr size_t kPoolSize = 4;

constexpr uint128 kPcgMultiplier =
    (static_cast<uint128>(2549297995355413924ULL) << 64) | 4865540595714422341ULL;

uint32_t Mix(uint32_t x, uint32_t y) {
  uint32_t r = kMixMultL * x - kMixMultR * y;
  return r ^ (r >> kXShift);
}

}  // namespace

std::vector<uint32_t> EntropyWords(uint128 value) {
  std::vector<uint32_t> words;
  do {
    words.push_back(static_cast<uint32_t>(value));
    value >>= 32;
  } while (value != 0);
  return words;
}

std::array<uint32_t, 4> SeedSequencePool(std::span<const uint32_t> entropy) {
  uint32_t hash_const = kInitA;
  auto hashmix = [&hash_const](uint32_t v) {
    v ^= hash_const;
    hash_const *= kMultA;
    v *= hash_const;
    return v ^ (v >> kXShift);
  };
  std::array<uint32_t, 4> pool{};
  for (size_t i = 0; i < kPoolSize; ++i) pool[i] = hashmix(i < entropy.size() ? entropy[i] : 0);
  for (size_t src = 0; src < kPoolSize; ++src)
    for (size_t dst = 0; dst < kPoolSize; ++dst)
      if (src != dst) pool[dst] = Mix(pool[dst], hashmix(pool[src]));
  for (size_t src = kPoolSize; src < entropy.size(); ++src)
    for (size_t dst = 0; dst < kPoolSize; ++dst) pool[dst] = Mix(pool[dst], hashmix(entropy[src]));
  return pool;
}

std::array<uint32_t, 8> GenerateStateWords(const std::array<uint32_t, 4>& pool) {
  std::array<uint32_t, 8> words{};
  uint32_t hash_const = kInitB;
  for (size_t k = 0; k < words.size(); ++k) {
    uint32_t v = pool[k % kPoolSize];
    v ^= hash_const;
    hash_const *= kMultB;
    v *= hash_const;
    words[k] = v ^ (v >> kXShift);
  }
  return words;
}

Pcg64 Pcg64::FromSeed(uint128 seed) {
  auto entropy = EntropyWords(seed);
  auto w = GenerateStateWords(SeedSequencePool(entropy));
  uint64_t s64[4];
  for (int m = 0; m < 4; ++m) s64[m] = w[2 * m] | (static_cast<uint64_t>(w[2 * m + 1]) << 32);
  // s64[0] is the high half of initstate (numpy's pcg64_set_seed).
  uint128 initstate = (static_cast<uint128>(s64[0]) << 64) | s64[1];
  uint128 initseq = (static_cast<uint128>(s64[2]) << 64) | s64[3];
  return Pcg64(initstate, initseq);
}

Pcg64::Pcg64(uint128 initstate, uint128 initseq) {
  inc_ = (initseq << 1) | 1;
  state_ = 0;
  state_ = state_ * kPcgMultiplier + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMultiplier + inc_;
}

uint64_t Pcg64::Next64() {
  state_ = state_ * kPcgMultiplier + inc_;
  uint64_t hi = static_cast<uint64_t>(state_ >> 64), lo = static_cast<uint64_t>(state_);
  unsigned rot = static_cast<unsigned>(hi >> 58);
  uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64 - rot) & 63));
}

uint32_t Pcg64::Next32() {
  if (has_uint32_) {
    has_uint32_ = false;
    return uinteger_;
  }
  uint64_t r = Next64();
  has_uint32_ = true;
  uinteger_ = static_cast<uint32_t>(r >> 32);
  return static_cast<uint32_t>(r);
}

uint64_t Pcg64::RandomInterval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t v;
  if (max <= 0xffffffffULL) {
    do v = Next32() & mask; while (v > max);
  } else {
    do v = Next64() & mask; while (v > max);
  }
  return v;
}

void Shuffle(Pcg64& rng, std::span<uint32_t> values) {
  Require(values.size() < (uint64_t{1} << 32),
          "Shuffle: {} entries; numpy-compatible shuffling here supports fewer than 2^32",
          values.size());
  // Inlined 32-bit path of RandomInterval: every i < 2^32 takes it, and the per-step mask
  // computation is the whole cost besides the swap.
  for (size_t i = values.size(); i-- > 1;) {
    uint32_t max = static_cast<uint32_t>(i);
    uint32_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    uint32_t j;
    do j = rng.Next32() & mask; while (j > max);
    std::swap(values[i], values[j]);
  }
}

std::string HexU128(uint128 value) {
  static const char* kDigits = "0123456789abcdef";
  std::string digits;
  do {
    digits.push_back(kDigits[static_cast<unsigned>(value & 0xf)]);
    value >>= 4;
  } while (value != 0);
  return "0x" + std::string(digits.rbegin(), digits.rend());
}

}  // namespace replica::data
