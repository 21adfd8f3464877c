// How a flat buffer of N floats is cut into R contiguous shards for reduce-scatter and ZeRO-1
// (rank r owns shard r: its slice of the summed gradient, of Adam m and v, and the parameters it
// updates).
//
// Promises (the cut is optim/shard_bounds.h ShardBounds, which `replica plan` sizes with too):
// shard boundaries lie on the fixed grad-norm blocks (optim/adamw.h kNormBlock, which do not
// depend on R), shards are contiguous, in rank order and cover [0, N) exactly; block counts differ
// by at most one between shards (shard r = blocks [⌊B·r/R⌋, ⌊B·(r+1)/R⌋), B = ⌈N/kNormBlock⌉).
// Because boundaries are block-aligned, each rank's grad-norm block partials are exactly the
// blocks the single-process norm would compute.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace replica::parallel {

// Error unless world is a power of two >= 1: the fixed reduction tree over micro-batches splits
// evens from odds, so only 2^k ranks each hold a whole subtree (see collectives.h).
void RequirePowerOfTwoWorld(int64_t world, const char* what = "world size");

// Error unless `world` ranks can share a global batch of `num_micro_batches` micro-batches with
// results independent of world: world a power of two dividing the micro-batch count, and (for
// world > 1) the micro-batch count a power of two as well — TreeAccumulator's pairwise tree over
// MicroBatchOrder(M) is the evens/odds tree only when M = 2^k (train/grad_accum.h).
void RequireRankIndependentBatch(int64_t num_micro_batches, int64_t world);

class ShardPlan {
 public:
  ShardPlan(size_t total_floats, int world);

  size_t total() const { return total_; }
  int world() const { return world_; }
  size_t begin(int r) const { return bounds_[static_cast<size_t>(r)]; }
  size_t end(int r) const { return bounds_[static_cast<size_t>(r) + 1]; }
  size_t size(int r) const { return end(r) - begin(r); }
  size_t max_size() const;  // the largest shard (what one rank's Adam m or v holds)
  size_t num_blocks() const { return blocks_; }
  size_t block_begin(int r) const;  // first grad-norm block of shard r
  size_t block_end(int r) const;

 private:
  size_t total_;
  int world_;
  size_t blocks_;
  std::vector<size_t> bounds_;  // world + 1 float offsets
};

}  // namespace replica::parallel
