// Python's random.Random, reproduced bit for bit for what OLMo-core draws from it: seeding from an
// integer (MT19937 init_by_array over the integer's 32-bit words), getrandbits, the rejection
// sampler behind randrange, and shuffle. OLMo-core permutes the order of a dataset's source files
// with random.Random(source_permutation_seed).shuffle; replica must read them in that order. All
// arithmetic is unsigned 32-bit with wrap-around, so results do not depend on compiler or machine.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace replica::data {

class PythonRandom {
 public:
  // random.Random(seed): Python seeds with abs(seed), so -5 and 5 give the same stream.
  explicit PythonRandom(int64_t seed);
  // A seed given as its magnitude (covers Python integers up to 2^64 - 1).
  static PythonRandom FromMagnitude(uint64_t magnitude);

  uint32_t NextU32();              // genrand_uint32
  uint64_t GetRandBits(int bits);  // random.getrandbits(bits), 1 <= bits <= 64
  uint64_t RandBelow(uint64_t n);  // random._randbelow(n), n >= 1: uniform in [0, n)

 private:
  PythonRandom() = default;
  void InitByArray(std::span<const uint32_t> key);
  void Twist();

  static constexpr int kN = 624;
  std::array<uint32_t, kN> mt_{};
  int index_ = kN;
};

// A Python integer seed written in decimal ("123", "-7", up to 2^64 - 1 in magnitude): the
// generator random.Random(seed) would be; nullopt when the text is no such integer.
std::optional<PythonRandom> PythonRandomFromText(const std::string& text);

// random.shuffle(values) with this generator: for i from size-1 down to 1, j = RandBelow(i + 1),
// swap values[i] and values[j].
void PythonShuffle(PythonRandom& rng, std::span<uint64_t> values);

}  // namespace replica::data
