#include "ops/rope_table.h"

#include <cmath>

#include "core/error.h"

namespace replica {
RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, const RopeParams& params) {
  Require(max_positions >= 0, "RoPE: table size must be >= 0, got {}", max_positions);
  const std::vector<double> inv = RopeInvFreq(params, head_dim);  // validates head_dim and params
  const double m = params.Scale();
  RopeTable t;
  t.max_positions = max_positions;
  t.head_dim = head_dim;
  t.params = params;
  const int64_t half = head_dim / 2;
  t.cos.resize(RopeTableBytesOf(max_positions, head_dim) / (2 * sizeof(float)));
  t.sin.resize(t.cos.size());
  for (int64_t j = 0; j < half; ++j) {
    for (int64_t p = 0; p < max_positions; ++p) {
      const double phi = static_cast<double>(p) * inv[j];
      t.cos[p * half + j] = static_cast<float>(m * std::cos(phi));
      t.sin[p * half + j] = static_cast<float>(m * std::sin(phi));
    }
  }
  return t;
}

uint64_t RopeTableBytesOf(int64_t max_positions, int64_t head_dim) {
  return 2 * sizeof(float) * static_cast<uint64_t>(max_positions * (head_dim / 2));  // cos, sin
}

RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, double theta) {
  return MakeRopeTable(max_positions, head_dim, RopeParams::Plain(theta));
}

}  // namespace replica
