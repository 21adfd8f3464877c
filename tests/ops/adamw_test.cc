#include "ops/cpu/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "op_test_util.h"

namespace replica {
namespace {
using testing::RandomVector;

// The SIMD update gives exactly the scalar double reference's bits (separately rounded double
// operations in the same order), for lengths that do and do not fill whole vectors.
TEST(AdamWElements, BitIdenticalToTheScalarReference) {
  const AdamWCoefficients c{0.7, 1.0 - 3e-4 * 0.1, 0.9, 0.95, 3e-4 / (1 - std::pow(0.9, 3)),
                            std::sqrt(1 - std::pow(0.95, 3)), 1e-8};
  for (int64_t n : {1, 3, 8, 13, 1000, 4099}) {
    const size_t sz = static_cast<size_t>(n);
    std::vector<float> p = RandomVector(sz, 1, 0.02f), g = RandomVector(sz, 2, 0.5f);
    std::vector<float> m = RandomVector(sz, 3, 0.01f), v = RandomVector(sz, 4, 0.01f);
    for (float& x : v) x = x * x;
    std::vector<float> p2 = p, m2 = m, v2 = v;
    AdamWElements(p.data(), g.data(), m.data(), v.data(), n, c);
    AdamWElementsReference(p2.data(), g.data(), m2.data(), v2.data(), n, c);
    EXPECT_EQ(0, std::memcmp(p.data(), p2.data(), sz * 4)) << n;
    EXPECT_EQ(0, std::memcmp(m.data(), m2.data(), sz * 4)) << n;
    EXPECT_EQ(0, std::memcmp(v.data(), v2.data(), sz * 4)) << n;
  }
}

}  // namespace
}  // namespace replica
