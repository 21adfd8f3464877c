// Random parameters for model tests: norm gains near 1 (1 + 0.1·N(0, 1)), every other tensor
// 0.3·N(0, 1), from a 64-bit Mersenne Twister seeded with `seed`, in the layout's view order.
#pragma once
#include <cstdint>
#include <random>

#include "model/olmo3.h"

namespace replica::test {

inline void RandomInit(Olmo3Model& m, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  for (const ParamView& v : m.layout().views()) {
    float* p = m.params().data() + v.offset;
    const bool norm = v.shape.size() == 1;
    for (size_t i = 0; i < v.numel; ++i) p[i] = norm ? 1.0f + 0.1f * n01(rng) : 0.3f * n01(rng);
  }
}

}  // namespace replica::test
