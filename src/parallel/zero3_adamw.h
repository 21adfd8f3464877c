// ZeRO-3 AdamW: the Optimizer (optim/optimizer.h) of parallel.sharding zero3. Rank r holds Adam m
// and v for its owned range only (shard_plan.h), and Step updates the owned fp32 master parameters
// from the owned gradient sum (zero3_store.h): both Step arguments are owned-range buffers
// (plan.size(rank) floats, element plan.begin(rank) first). No parameter all-gather follows: the
// next forward gathers each unit from its owners. The per-element update is AdamW's
// (AdamWUpdateShard), so parameters, m and v have the bits of AdamW on the whole buffer for any R.
//
// SaveState gathers the full m and v on rank 0 (the checkpoint writer), LoadState keeps this rank's
// slice of full-size m and v: checkpoints stay world-size independent.
#pragma once
#include <cstdint>
#include <vector>

#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "tensor/flat_buffer.h"

namespace replica::parallel {

class Zero3AdamW final : public Optimizer {
 public:
  // Zero state (t = 0). `comm` and `backend` must outlive it. `master`, when given, is the owned
  // fp32 master parameters Step updates (the ZeRO-3 store's; plan.size(rank) floats), which
  // master() reports for whoever reads or writes the owned state (checkpoints).
  Zero3AdamW(const ParamLayout& layout, const AdamWConfig& config, Communicator& comm,
             const Backend& backend, FlatBuffer* master = nullptr);

  // Not collective: t += 1, AdamW on the owned range of `params` from the owned `grads`.
  void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) override;
  // Collective: full m and v on rank 0 (kept for the next call), nullptr elsewhere.
  const OptimizerState* SaveState() override;
  // Keeps this rank's slice of full-size m and v, and t. Not collective.
  void LoadState(OptimizerState state) override;
  // The owned range with its master parameters (when given), m and v.
  OwnedState Owned() override;
  void SetStep(int64_t t) override;
  int64_t step() const override { return step_; }
  double max_grad_norm() const override { return config_.max_grad_norm; }

  const ShardPlan& plan() const { return plan_; }
  FlatBuffer* master() { return master_; }
  float* m() { return m_.data(); }
  float* v() { return v_.data(); }

 private:
  const ParamLayout& layout_;
  AdamWConfig config_;
  Communicator& comm_;
  const Backend& backend_;
  ShardPlan plan_;
  std::vector<double> decay_;
  FlatBuffer* master_;
  FlatBuffer m_, v_;  // the owned range
  int64_t step_ = 0;
  OptimizerState full_;  // rank 0: the gather target of SaveState
};

}  // namespace replica::parallel
