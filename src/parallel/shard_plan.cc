#include "parallel/shard_plan.h"

#include <algorithm>

#include "core/error.h"
#include "optim/adamw.h"
#include "optim/shard_bounds.h"

namespace replica::parallel {

void RequirePowerOfTwoWorld(int64_t world, const char* what) {
  Require(world >= 1 && (world & (world - 1)) == 0,
          "{} {}: must be a power of two (1, 2, 4, 8, ...): the fixed reduction tree that makes "
          "results independent of the rank count gives each of 2^k ranks one whole subtree of "
          "micro-batches",
          what, world);
}

void RequireRankIndependentBatch(int64_t m, int64_t world) {
  RequirePowerOfTwoWorld(world);
  Require(m >= 1 && m % world == 0,
          "world size {}: does not divide the {} micro-batches of a global batch "
          "(train.global_batch_instances / train.micro_batch_instances); every rank needs the same "
          "number of whole micro-batches",
          world, m);
  Require(world == 1 || (m & (m - 1)) == 0,
          "world size {}: the global batch has {} micro-batches "
          "(train.global_batch_instances / train.micro_batch_instances), not a power of two; with "
          "more than one rank the fixed reduction tree needs 2^k micro-batches for results that do "
          "not depend on the rank count (change train.micro_batch_instances)",
          world, m);
}

ShardPlan::ShardPlan(size_t total_floats, int world)
    : total_(total_floats),
      world_(world),
      blocks_((total_floats + kNormBlock - 1) / kNormBlock),
      bounds_(ShardBounds(total_floats, world)) {}

size_t ShardPlan::max_size() const { return LargestShardFloats(total_, world_); }

size_t ShardPlan::block_begin(int r) const {
  return blocks_ * static_cast<size_t>(r) / static_cast<size_t>(world_);
}
size_t ShardPlan::block_end(int r) const { return block_begin(r + 1); }

}  // namespace replica::parallel
