#include "ops/rope_table.h"

#include <cmath>
#include <vector>

#include "core/error.h"
#include "ops/backend.h"

namespace replica {
namespace {

size_t EntriesOf(int64_t max_positions, int64_t head_dim) {
  return static_cast<size_t>(max_positions * (head_dim / 2));
}

RopeTable EmptyTable(int64_t max_positions, int64_t head_dim, const RopeParams& params) {
  Require(max_positions >= 0, "RoPE: table size must be >= 0, got {}", max_positions);
  RopeInvFreq(params, head_dim);  // validates head_dim and params before anything is allocated
  RopeTable t;
  t.max_positions = max_positions;
  t.head_dim = head_dim;
  t.params = params;
  return t;
}

}  // namespace

void RopeTableEntries(const RopeParams& params, int64_t max_positions, int64_t head_dim,
                      float* cos, float* sin) {
  Require(max_positions >= 0, "RoPE: table size must be >= 0, got {}", max_positions);
  const std::vector<double> inv = RopeInvFreq(params, head_dim);  // validates head_dim and params
  const double m = params.Scale();
  const int64_t half = head_dim / 2;
  for (int64_t j = 0; j < half; ++j) {
    for (int64_t p = 0; p < max_positions; ++p) {
      const double phi = static_cast<double>(p) * inv[j];
      cos[p * half + j] = static_cast<float>(m * std::cos(phi));
      sin[p * half + j] = static_cast<float>(m * std::sin(phi));
    }
  }
}

RopeTable MakeRopeTable(const Backend& backend, int64_t max_positions, int64_t head_dim,
                        const RopeParams& params) {
  RopeTable t = EmptyTable(max_positions, head_dim, params);
  const size_t n = EntriesOf(max_positions, head_dim);
  t.cos = backend.Allocate(DType::kF32, n);
  t.sin = backend.Allocate(DType::kF32, n);
  if (backend.is_host()) {
    backend.FillRopeTable(params, max_positions, head_dim, t.cos.f32(), t.sin.f32());
  } else {
    std::vector<float> cos(n), sin(n);
    backend.FillRopeTable(params, max_positions, head_dim, cos.data(), sin.data());
    backend.CopyFromHost(t.cos.raw(), cos.data(), n * sizeof(float));
    backend.CopyFromHost(t.sin.raw(), sin.data(), n * sizeof(float));
  }
  return t;
}

RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, const RopeParams& params) {
  RopeTable t = EmptyTable(max_positions, head_dim, params);
  const size_t n = EntriesOf(max_positions, head_dim);
  t.cos = Buffer(DType::kF32, n);
  t.sin = Buffer(DType::kF32, n);
  RopeTableEntries(params, max_positions, head_dim, t.cos.f32(), t.sin.f32());
  return t;
}

uint64_t RopeTableBytesOf(int64_t max_positions, int64_t head_dim) {
  return 2 * sizeof(float) * EntriesOf(max_positions, head_dim);  // cos, sin
}

RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, double theta) {
  return MakeRopeTable(max_positions, head_dim, RopeParams::Plain(theta));
}

}  // namespace replica
