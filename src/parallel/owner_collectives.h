// Collectives over owned ranges, for ZeRO-3 (zero3.h): rank r of R owns floats
// [plan.begin(r), plan.end(r)) of the flat layout and holds them in a buffer `owned` (owned[0] is
// element plan.begin(r)). Unlike collectives.h these work for ANY world size R >= 1: the order of
// every sum is fixed by rank numbers alone (a left fold in rank order), never by a tree over
// ranks, so the bits do not depend on R.
//
// All functions are collective: every rank calls them with the same plan, ranges and sizes, in
// the same order. They use Send/Recv only in patterns that cannot deadlock with a blocking Send
// (owners are visited in rank order; an owner receives in rank order).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/backend.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"

namespace replica::parallel {

// `piece` holds this rank's values of elements [lo, hi). Every owner o of part of [lo, hi) folds
// the R ranks' values of its overlap into its accumulator in rank order:
//   acc[e] = value_r[e] + acc[e]   for r = 0, 1, ..., R-1
// (Backend::AddInto). `recv` is scratch of at least hi - lo floats; `acc` is this rank's owned
// accumulator (acc[0] is element plan.begin(rank)). piece, acc and recv are `backend`'s memory:
// when it is not the host's, what is sent and received goes through host copies.
void OrderedFoldRange(Communicator& comm, const ShardPlan& plan, size_t lo, size_t hi,
                      const float* piece, float* acc, float* recv,
                      const Backend& backend);

// ‖g‖₂ from the owned ranges of a gradient: each rank's fixed grad-norm block partials
// (optim/adamw.h GradSquarePartials; shard boundaries are block-aligned) are gathered and summed in
// block order: the bits of GlobalGradNorm on the whole buffer.
double OwnedGradNorm(Communicator& comm, const ShardPlan& plan, const float* owned,
                     const Backend& backend);

// Every rank's `mine` (the same size on every rank), concatenated in rank order, on every rank.
std::vector<double> AllGatherEqual(Communicator& comm, const std::vector<double>& mine);

// Root receives every rank's owned range into `whole` (plan.total() floats, used on root only).
// owned and whole are `backend`'s memory (copied through the host when it is not the host's).
void GatherOwned(Communicator& comm, const ShardPlan& plan, const float* owned, float* whole,
                 const Backend& backend, int root = 0);

}  // namespace replica::parallel
