// The sharded optimizer of data parallelism: one Optimizer (optim/optimizer.h) for ZeRO-1 and
// ZeRO-3. Rank r of R holds the rule's state (Adam m and v) for its shard of the flat layout only
// (shard_plan.h: [plan.begin(r), plan.end(r)), block-aligned), and Step applies the update rule
// (optim/update_rule.h) to exactly that span, from the shard of the gradient the reducer left
// holding the global sum. Each element depends only on its own values, so parameters, m and v
// have the bits of the single-process optimizer on the whole buffer for any R.
//
// What the parameters are, and how the other ranks see the update, is the gather policy:
//   kAllGatherParams  ZeRO-1 (data_parallel.h). Step takes the whole parameter and gradient
//                     buffers (every rank holds every parameter), updates its shard and all-gathers
//                     the parameters (collective; R must be a power of two, collectives.h).
//   kGatherOnUse      ZeRO-3 (zero3.h). Step takes owned-range buffers (plan.size(r) floats,
//                     element plan.begin(r) first: the store's fp32 master parameters and gradient
//                     accumulator) and sends nothing: the next forward gathers each unit from its
//                     owners (zero3_store.h). Any R >= 1.
//
// Checkpoints stay world-size independent: each rank writes and reads its own range through
// Owned(). SaveState gathers the full m and v on rank 0; LoadState keeps this rank's slice.
#pragma once
#include <cstdint>
#include <memory>

#include "optim/optimizer.h"
#include "optim/update_rule.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "tensor/flat_buffer.h"

namespace replica::parallel {

enum class GatherPolicy { kAllGatherParams, kGatherOnUse };

class ShardedOptimizer final : public Optimizer {
 public:
  // Zero state (t = 0) over the shards of `layout` for comm.world() ranks. `comm` and `backend`
  // (which runs the rule and the copies) must outlive it. `master`, only with kGatherOnUse, is the
  // owned fp32 master parameters Step updates (plan.size(rank) floats), which Owned() reports for
  // checkpoints.
  ShardedOptimizer(const ParamLayout& layout, std::unique_ptr<const UpdateRule> rule,
                   GatherPolicy policy, Communicator& comm, const Backend& backend,
                   FlatBuffer* master = nullptr);

  // t += 1, the rule on this rank's span, then the policy's gather (collective for
  // kAllGatherParams; not collective for kGatherOnUse).
  void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) override;
  // Collective: full m and v on rank 0 (kept for the next call), nullptr elsewhere.
  const OptimizerState* SaveState() override;
  // Keeps this rank's slice of full-size m and v, and t. Not collective.
  void LoadState(OptimizerState state) override;
  // This rank's range with its m and v, and the master parameters when given (else nullptr: the
  // caller's whole buffer is authoritative).
  OwnedState Owned() override;
  void SetStep(int64_t t) override;
  int64_t step() const override { return step_; }
  double max_grad_norm() const override { return rule_->max_grad_norm(); }

  const ShardPlan& plan() const { return plan_; }
  GatherPolicy policy() const { return policy_; }
  size_t shard_begin() const { return plan_.begin(comm_.rank()); }
  size_t shard_end() const { return plan_.end(comm_.rank()); }

 private:
  const char* what() const;  // "ZeRO-1" or "ZeRO-3", for errors
  std::unique_ptr<const UpdateRule> rule_;
  GatherPolicy policy_;
  Communicator& comm_;
  const Backend& backend_;
  ShardPlan plan_;
  FlatBuffer* master_;
  FlatBuffer m_, v_;  // this rank's shard only
  int64_t step_ = 0;
  OptimizerState full_;  // rank 0: the gather target of SaveState
};

}  // namespace replica::parallel
