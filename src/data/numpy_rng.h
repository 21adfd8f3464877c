// numpy's default random stack, reproduced bit for bit: SeedSequence (pool size 4) -> PCG64
// (XSL-RR 128/64) -> Generator.shuffle on a 1-D array. OLMo-core orders its training data with
// exactly this (get_rng(seed + epoch)), so replica must match it to feed the same instances
// (docs/design.md §2.5). The algorithms are spelled out in tests/data/oracles/data-order/README.md;
// everything here is unsigned, wrapping arithmetic with no floating point, so results do not
// depend on compiler or machine.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace replica::data {

using uint128 = unsigned __int128;

// An integer as SeedSequence sees it: 32-bit words, least significant first; 0 -> {0}.
std::vector<uint32_t> EntropyWords(uint128 value);

// SeedSequence(entropy).pool for pool_size 4 and no spawn key.
std::array<uint32_t, 4> SeedSequencePool(std::span<const uint32_t> entropy_words);

// SeedSequence.generate_state(4, uint64) as its 8 underlying 32-bit words.
std::array<uint32_t, 8> GenerateStateWords(const std::array<uint32_t, 4>& pool);

// numpy.random.PCG64. Not thread-safe; copy it to fork a stream.
class Pcg64 {
 public:
  // numpy.random.PCG64(seed) for a non-negative integer seed.
  static Pcg64 FromSeed(uint128 seed);
  // pcg_setseq_128_srandom_r(initstate, initseq).
  Pcg64(uint128 initstate, uint128 initseq);

  uint64_t Next64();
  // Low half of a 64-bit draw first; the high half is buffered for the next call.
  uint32_t Next32();
  // Uniform in [0, max] by masked rejection (numpy's random_interval, not Lemire).
  uint64_t RandomInterval(uint64_t max);

  uint128 state() const { return state_; }
  uint128 increment() const { return inc_; }

 private:
  uint128 state_ = 0, inc_ = 0;
  bool has_uint32_ = false;
  uint32_t uinteger_ = 0;
};

// numpy.random.Generator.shuffle on a 1-D array (Fisher-Yates from the end, j = random_interval(i)).
// Requires values.size() < 2^32, the only case OLMo-core uses (asserted there too).
void Shuffle(Pcg64& rng, std::span<uint32_t> values);

// Python's hex(): "0x" + lowercase digits, no leading zeros ("0x0" for zero).
std::string HexU128(uint128 value);

}  // namespace replica::data
