#include "data/python_random.h"

#include <bit>
#include <utility>

#include "core/error.h"
#include "core/python_int.h"

namespace replica::data {
namespace {

constexpr int kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpperMask = 0x80000000u, kLowerMask = 0x7fffffffu;

}  // namespace

PythonRandom::PythonRandom(int64_t seed) {
  // abs() of INT64_MIN is 2^63, which fits the unsigned magnitude.
  const uint64_t magnitude =
      seed < 0 ? uint64_t{0} - static_cast<uint64_t>(seed) : static_cast<uint64_t>(seed);
  *this = FromMagnitude(magnitude);
}

PythonRandom PythonRandom::FromMagnitude(uint64_t magnitude) {
  // CPython random_seed: the key is the integer's 32-bit words, least significant first, with no
  // leading zero words; zero is the one-word key {0}.
  std::array<uint32_t, 2> key{static_cast<uint32_t>(magnitude),
                              static_cast<uint32_t>(magnitude >> 32)};
  PythonRandom r;
  r.InitByArray(std::span<const uint32_t>(key.data(), key[1] != 0 ? 2 : 1));
  return r;
}

void PythonRandom::InitByArray(std::span<const uint32_t> key) {
  // init_genrand(19650218), then the key mixed in (Matsumoto and Nishimura's init_by_array).
  mt_[0] = 19650218u;
  for (int i = 1; i < kN; ++i)
    mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  const size_t len = key.size();
  int i = 1;
  size_t j = 0;
  for (size_t k = len > static_cast<size_t>(kN) ? len : kN; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= len) j = 0;
  }
  for (int k = kN - 1; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) -
             static_cast<uint32_t>(i);
    ++i;
    if (i >= kN) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;
  index_ = kN;
}

void PythonRandom::Twist() {
  for (int k = 0; k < kN; ++k) {
    const uint32_t y = (mt_[k] & kUpperMask) | (mt_[(k + 1) % kN] & kLowerMask);
    mt_[k] = mt_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  index_ = 0;
}

uint32_t PythonRandom::NextU32() {
  if (index_ >= kN) Twist();
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t PythonRandom::GetRandBits(int bits) {
  Require(bits >= 1 && bits <= 64, "getrandbits: {} bits (1 to 64 supported)", bits);
  // CPython: one 32-bit draw per word, least significant word first; the last (partial) word is
  // the top bits of its draw.
  if (bits <= 32) return NextU32() >> (32 - bits);
  const uint64_t low = NextU32();
  const uint64_t high = NextU32() >> (64 - bits);
  return low | (high << 32);
}

uint64_t PythonRandom::RandBelow(uint64_t n) {
  Require(n >= 1, "randbelow: n must be at least 1");
  // _randbelow_with_getrandbits: k = n.bit_length(), redraw while r >= n.
  const int k = 64 - std::countl_zero(n);
  uint64_t r = GetRandBits(k);
  while (r >= n) r = GetRandBits(k);
  return r;
}

std::optional<PythonRandom> PythonRandomFromText(const std::string& text) {
  const std::optional<uint64_t> magnitude = PythonIntMagnitude(text);
  if (!magnitude) return std::nullopt;
  return PythonRandom::FromMagnitude(*magnitude);
}

void PythonShuffle(PythonRandom& rng, std::span<uint64_t> values) {
  for (size_t i = values.size(); i-- > 1;) {
    const size_t j = static_cast<size_t>(rng.RandBelow(static_cast<uint64_t>(i) + 1));
    std::swap(values[i], values[j]);
  }
}

}  // namespace replica::data
