// The ZeRO-3 ParamStore (model/param_store.h): rank r holds only its owned range
// [plan.begin(r), plan.end(r)) of the flat layout (shard_plan.h) — the fp32 master parameters and
// the step's gradient accumulator — and gathers a unit's weights from their owners when the model
// acquires it.
//   Acquire(u)    all-gathers unit u's floats into a unit buffer (owner_collectives.h GatherRange);
//                 Release(u) returns the buffer. A unit wholly inside the owned range is read in
//                 place from the master copy (the owner only sends it). No prefetch: the
//                 Communicator is blocking and single-threaded (MPI FUNNELED), so a gather cannot
//                 overlap compute.
//   Grads(u)      a zeroed unit-sized buffer the backward accumulates into (one per open unit);
//   GradsDone(u)  the ordered fold: each owner adds the R ranks' pieces of its part of unit u to its
//                 accumulator in rank order (OrderedFoldRange), then the buffer is returned.
// Micro-batch k of rank r is global micro-batch j = k·R + r (the loader's strided split), so when
// every rank runs its local micro-batches k = 0, 1, ... in order, the accumulator ends up with
// the left fold over j = 0..M-1: the bits of the world-1 sequential accumulation, for any R.
// Memory per rank: 2 owned buffers (master, accumulator) + at most 2 unit weight buffers (the tied
// LM head holds units L+1 and 0 together; none for units read in place) + at most 2 unit gradient
// buffers (1 untied) + 1 receive buffer (world > 1), each of the largest unit's size. Every call is collective (all ranks make the same calls, as Olmo3Model does).
#pragma once
#include <cstdint>
#include <vector>

#include "model/param_store.h"
#include "ops/backend.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "tensor/flat_buffer.h"

namespace replica::parallel {

class Zero3ParamStore final : public ParamStore {
 public:
  // `comm` and `backend` must outlive the store. Owned buffers start at zero.
  Zero3ParamStore(const ParamLayout& layout, int64_t num_layers, Communicator& comm,
                  const Backend& backend);

  const float* Acquire(int unit) override;
  void Release(int unit) override;
  float* Grads(int unit) override;
  void GradsDone(int unit) override;

  // Zeroes the gradient accumulator (the start of an optimizer step). Not collective.
  void BeginStep();

  const ShardPlan& plan() const { return plan_; }
  size_t owned_begin() const { return plan_.begin(comm_.rank()); }
  size_t owned_end() const { return plan_.end(comm_.rank()); }
  FlatBuffer& master() { return master_; }          // owned fp32 parameters
  FlatBuffer& accumulator() { return accumulator_; }  // owned gradient sum of this step
  size_t unit_floats() const { return unit_floats_; }  // the largest unit
  // Unit buffers allocated so far (weights, gradients): what memory the units take.
  size_t unit_buffers() const { return weights_.size() + grads_.size() + (recv_.size() ? 1 : 0); }
  // Wall seconds spent in the unit gathers (Acquire) and the gradient folds (GradsDone) so far,
  // waiting for other ranks included: what a prefetch could hide at most.
  double gather_seconds() const { return gather_s_; }
  double fold_seconds() const { return fold_s_; }

 private:
  struct Slot {
    int unit = -1;  // -1: free
    FlatBuffer buffer;
  };
  float* Take(std::vector<Slot>& slots, int unit);
  Slot* Find(std::vector<Slot>& slots, int unit);
  bool Held(int unit) const;  // acquired in place
  size_t lo(int unit) const { return bounds_.at(static_cast<size_t>(unit)); }
  size_t hi(int unit) const { return bounds_.at(static_cast<size_t>(unit) + 1); }

  Communicator& comm_;
  const Backend& backend_;
  ShardPlan plan_;
  std::vector<size_t> bounds_;
  size_t unit_floats_ = 0;
  FlatBuffer master_, accumulator_, recv_;
  std::vector<Slot> weights_, grads_;
  std::vector<int> direct_;  // units acquired in place from master_
  double gather_s_ = 0, fold_s_ = 0;
};

}  // namespace replica::parallel
