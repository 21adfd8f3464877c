// Large counts for people: 7298617344 -> "7.30 B", 2504192425984 -> "2.50 T" (K, M, B, T, P:
// powers of 1000, two decimals). Counts below 1000 are written as they are.
#pragma once
#include <cstdint>
#include <string>

namespace replica {

std::string HumanCount(uint64_t n);

// "7298617344 (7.30 B)": the exact count, then HumanCount when it differs from it.
std::string CountWithHuman(uint64_t n);

}  // namespace replica
