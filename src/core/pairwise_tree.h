// The shape of the contiguous pairwise (binary-counter) tree that sums leaves one at a time
// (train/grad_accum.h TreeAccumulator): each added leaf merges with the completed left subtrees of
// its own size, the last leaf folds whatever is left. What it keeps between leaves is a stack of
// completed subtrees, one per set bit of the number of leaves added so far.
#pragma once
#include <cstdint>

namespace replica {

// The most completed subtrees the tree holds at once while `leaves` leaves are added: the
// accumulator's spare buffers (it allocates exactly this many) and what `replica plan` counts.
// After q + 1 leaves (q + 1 < leaves: the last one folds instead of pushing) the stack holds
// popcount(q + 1) subtrees, so this is the largest popcount in [1, leaves − 1]: ⌊log2 leaves⌋
// (0 for a single leaf).
inline int64_t PairwiseTreeSpareBuffers(int64_t leaves) {
  int64_t depth = 0;
  while (leaves > 1) {
    leaves >>= 1;
    ++depth;
  }
  return depth;
}

}  // namespace replica
