// The cos/sin table of one rotary embedding (Backend::RopeForward / RopeBackward), built by
// MakeRopeTable below: entry [t, j] holds m·cos(t·inv_freq[j]) and m·sin(...), m the
// RopeParams scale, each computed in double and rounded to float once.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/rope_params.h"

namespace replica {

struct RopeTable {
  int64_t max_positions = 0, head_dim = 0;
  RopeParams params;
  std::vector<float> cos, sin;  // [max_positions, head_dim / 2], both already times m
};

RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, const RopeParams& params);
// The bytes of the table MakeRopeTable(max_positions, head_dim, ...) builds.
uint64_t RopeTableBytesOf(int64_t max_positions, int64_t head_dim);
// Plain RoPE with this theta.
RopeTable MakeRopeTable(int64_t max_positions, int64_t head_dim, double theta);

}  // namespace replica
