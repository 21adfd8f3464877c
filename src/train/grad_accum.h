// Gradient accumulation over micro-batches with a fixed reduction tree (docs/design.md §2.3), so the
// summed gradient of a global batch has the same bits however its micro-batches are spread over
// data-parallel ranks.
//
// A global batch of I instances (positions 0..I-1, as the data loader orders them) is split into
// M = I / μ micro-batches of μ instances. Micro-batch j holds positions j, j+M, j+2M, ... (strided,
// because the loader gives rank r of R the positions r, r+R, ...: with R | M, rank r holds exactly
// the micro-batches j ≡ r mod R, whatever R is).
//
// The sum is a binary tree over micro-batch indices that splits evens from odds at each level:
//   Sum(j ∈ S) = Sum(even-ranked members of S) + Sum(odd-ranked members of S)
// For M = 2^k and R = 2^d ranks, rank r's micro-batches form one subtree, so a rank sums its own
// micro-batches locally and the ranks' partial sums are combined by the top d levels of the same
// tree. Locally the tree is evaluated in MicroBatchOrder(M) (the evens-first permutation, i.e.
// bit reversal for powers of two), in which it is a plain contiguous pairwise tree; TreeAccumulator
// does that with ⌊log2 M⌋ spare gradient buffers (core/pairwise_tree.h).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "ops/backend.h"
#include "tensor/flat_buffer.h"

namespace replica {

// The order in which micro-batches 0..M-1 are processed: evens-first recursively
// (M = 8: 0 4 2 6 1 5 3 7).
std::vector<int64_t> MicroBatchOrder(int64_t num_micro_batches);

// Positions (indices into the global batch) of micro-batch j: j + M·i for i = 0..μ-1.
std::vector<int64_t> MicroBatchPositions(int64_t j, int64_t num_micro_batches,
                                         int64_t micro_batch_instances);

// Sums `count` leaves, each a gradient buffer plus a few fp64 scalars, along the contiguous
// pairwise (binary-counter) tree over the order in which they are added.
class TreeAccumulator {
 public:
  static constexpr int kScalars = 2;
  using Scalars = std::array<double, kScalars>;

  // The sums, moves and zeroing run on `backend`, which must outlive the accumulator.
  TreeAccumulator(size_t floats, int64_t count, const Backend& backend);
  // Starts a new sum of `count` leaves. The spare buffers the tree needs
  // (core/pairwise_tree.h PairwiseTreeSpareBuffers) are allocated here and in the constructor,
  // kept across Resets, so a training step allocates nothing.
  void Reset(int64_t count);

  // Adds leaf number `added()` whose gradient is in `g`. When it is the last leaf, `g` and the
  // returned scalars hold the totals; otherwise `g` is left all zero (its values moved into a
  // spare buffer in the same pass), ready for the next leaf to accumulate into.
  Scalars Add(FlatBuffer& g, Scalars scalars);
  int64_t added() const { return added_; }
  size_t buffers_allocated() const { return pool_.size(); }

 private:
  struct Node {
    int level;
    size_t buffer;
    Scalars scalars;
  };
  size_t TakeBuffer();
  size_t floats_;
  const Backend* backend_;
  int64_t count_, added_ = 0;
  std::vector<Node> stack_;
  std::vector<FlatBuffer> pool_;
  std::vector<size_t> free_;
};

// a[i] = b[i] + a[i] for every element (Backend::AddInto; IEEE addition commutes).
void AddInto(FlatBuffer& a, const FlatBuffer& b, const Backend& backend);

}  // namespace replica
