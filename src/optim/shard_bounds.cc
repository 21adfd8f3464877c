#include "optim/shard_bounds.h"

#include <algorithm>

#include "core/error.h"
#include "optim/adamw.h"

namespace replica {

std::vector<size_t> ShardBounds(size_t total_floats, int world) {
  Require(world >= 1, "shard plan: world must be >= 1, got {}", world);
  const size_t blocks = (total_floats + kNormBlock - 1) / kNormBlock;
  std::vector<size_t> bounds(static_cast<size_t>(world) + 1);
  for (int r = 0; r <= world; ++r) {
    const size_t b = blocks * static_cast<size_t>(r) / static_cast<size_t>(world);
    bounds[static_cast<size_t>(r)] = std::min(total_floats, b * kNormBlock);
  }
  return bounds;
}

size_t LargestShardFloats(size_t total_floats, int world) {
  const std::vector<size_t> bounds = ShardBounds(total_floats, world);
  size_t most = 0;
  for (size_t r = 0; r + 1 < bounds.size(); ++r) most = std::max(most, bounds[r + 1] - bounds[r]);
  return most;
}

}  // namespace replica
