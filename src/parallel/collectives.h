// Deterministic collectives for data parallelism: the cross-rank part of the fixed reduction tree
// of train/grad_accum.h, so a gradient, loss or norm summed over R = 2^d ranks has exactly the bits
// the single process computes (docs/design.md §2.3).
//
// Why this order. Micro-batch j of a global batch with M micro-batches holds positions j, j+M, ...
// and rank r of R holds the micro-batches j ≡ r (mod R) (it reads batch[r::R]). The tree splits a
// set's members into even- and odd-ranked ones at every level, so its nodes are residue classes:
// the node "j ≡ c (mod 2^k)" has children "j ≡ c (mod 2^(k+1))" and "j ≡ c + 2^k (mod 2^(k+1))".
// A rank's micro-batches are the node "j ≡ r (mod R)", a whole subtree, which the rank sums
// locally (TreeAccumulator). Going up from the rank nodes, the first combination joins classes
// r and r + R/2 (mod R) — ranks whose numbers differ by R/2 — then R/4, ..., and the root (the last
// addition: evens + odds) joins ranks differing by 1. So the cross-rank exchanges go with partner
// distance R/2, R/4, ..., 1. (Growing distances 1, 2, 4, ... would combine rank 0 with rank 1
// first — micro-batch classes 0 and 1 mod R — a node that does not exist in the single-process
// tree, and the bits would change with R.) At every level both partners add the same two values;
// IEEE addition is commutative, so both get the same bits whichever operand comes first.
//
// All functions are collective: every rank of `comm` calls them with the same plan/sizes.
#pragma once
#include <cstddef>
#include <vector>

#include "ops/backend.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"

namespace replica::parallel {

// On entry rank r's `buf` (plan.total() floats) holds the sum over its own micro-batches. On return
// buf[plan.begin(r), plan.end(r)) holds the global sum (the bits of the single-process tree); the
// rest of buf holds partial sums and must be treated as garbage. Recursive halving with partner
// distances R/2, ..., 1; at distance D a rank keeps the half of its current shard range that
// contains its own shard. Exchanges go in chunks of at most kCollectiveChunkFloats; the additions
// run on `backend` (Backend::AddInto); when its memory is not the host's, what is sent and
// received is copied through the host (Backend::CopyToHost / CopyFromHost).
void TreeReduceScatter(Communicator& comm, float* buf, const ShardPlan& plan,
                       const Backend& backend);

// Every rank contributes buf[plan.begin(r), plan.end(r)); on return all of buf is identical on
// every rank. Recursive doubling (distances 1, 2, ...); copies only, no arithmetic. `buf` is
// `backend`'s memory: when it is not the host's (is_host() false) it is gathered in a host copy.
void AllGatherShards(Communicator& comm, float* buf, const ShardPlan& plan,
                     const Backend& backend);

// values[i] = the tree sum over ranks of every rank's values[i], on every rank (same bits).
void TreeAllReduce(Communicator& comm, std::vector<double>& values);

// ‖g‖₂ of the reduce-scattered gradient: rank r computes GradSquarePartials over its shard (whole
// fixed blocks, optim/adamw.h), the block partials are all-gathered and summed in block order: the
// same operations, in the same order, as GlobalGradNorm on the full buffer.
double ShardedGradNorm(Communicator& comm, const float* grads, const ShardPlan& plan,
                       const Backend& backend);

// Copies root's `bytes` bytes at `data` to every rank (binomial tree).
void Broadcast(Communicator& comm, void* data, size_t bytes, int root = 0);

inline constexpr size_t kCollectiveChunkFloats = size_t{1} << 22;  // 16 MiB exchange buffers

}  // namespace replica::parallel
