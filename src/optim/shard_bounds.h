// How a flat buffer of N floats is cut into R contiguous shards (parallel/shard_plan.h ShardPlan,
// and what `replica plan` counts per rank): shard r = grad-norm blocks [⌊B·r/R⌋, ⌊B·(r+1)/R⌋)
// of kNormBlock floats (adamw.h), B = ⌈N/kNormBlock⌉, the last one cut at N. Boundaries lie on
// blocks that do not depend on R, shards are in rank order and cover [0, N) exactly.
#pragma once
#include <cstddef>
#include <vector>

namespace replica {

// The R + 1 float offsets delimiting the shards (world >= 1: Error otherwise).
std::vector<size_t> ShardBounds(size_t total_floats, int world);
// The floats of the largest shard: what one rank holds of a sharded buffer (Adam m, v; ZeRO-3's
// master parameters and gradient accumulator).
size_t LargestShardFloats(size_t total_floats, int world);

}  // namespace replica
