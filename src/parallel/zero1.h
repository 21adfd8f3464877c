// ZeRO-1 AdamW: the Optimizer (optim/optimizer.h) of data parallelism. Every rank holds all
// parameters and a full gradient buffer, but Adam m and v only for its shard (shard_plan.h). Step
// runs AdamW on this rank's shard only (adamw.h AdamWUpdateRange: each element depends on its own
// values only), then all-gathers the parameters. It reads only the shard of the gradient, which
// the data-parallel reduction (data_parallel.h: tree reduce-scatter) left holding the global sum.
// With world 1 this is exactly AdamW::Step on the whole buffer, and for any power-of-two world the
// parameters, m and v have the same bits as with world 1.
//
// Checkpoints stay world-size independent: each rank writes and reads its own range through
// Owned() (its shard of m and v; the parameters of the range are in the caller's full buffer).
// SaveState() assembles full m and v on rank 0, LoadState() takes full m and v and keeps this
// rank's slice.
#pragma once
#include <cstdint>
#include <vector>

#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "tensor/flat_buffer.h"

namespace replica::parallel {

class Zero1AdamW final : public Optimizer {
 public:
  // Zero state (t = 0). Every rank of `comm` constructs one; the communicator must outlive it.
  // Buffer math (the norm's partials, the AdamW elements, copies) runs on `backend`, which must
  // outlive this object.
  Zero1AdamW(const ParamLayout& layout, const AdamWConfig& config, Communicator& comm,
             const Backend& backend);

  // Collective. t += 1, AdamW on the shard with clip coefficient `clip_coef`, all-gather params.
  void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) override;
  // Collective: gathers every rank's shard of m and v into full-size buffers on rank 0 (kept for
  // the next call) and returns them with t there; nullptr on the other ranks.
  const OptimizerState* SaveState() override;
  // Keeps this rank's slice of full-size m and v, and t. Not collective.
  void LoadState(OptimizerState state) override;
  // [shard_begin, shard_end) with this rank's m and v; params nullptr (the caller's full buffer).
  OwnedState Owned() override;
  void SetStep(int64_t t) override;
  int64_t step() const override { return step_; }
  double max_grad_norm() const override { return config_.max_grad_norm; }

  const ShardPlan& plan() const { return plan_; }
  size_t shard_begin() const { return plan_.begin(comm_.rank()); }
  size_t shard_end() const { return plan_.end(comm_.rank()); }

 private:
  const ParamLayout& layout_;
  AdamWConfig config_;
  Communicator& comm_;
  const Backend& backend_;
  ShardPlan plan_;
  std::vector<double> decay_;
  FlatBuffer m_, v_;      // this rank's shard only
  int64_t step_ = 0;
  OptimizerState full_;   // rank 0: the gather target of SaveState
};

}  // namespace replica::parallel
