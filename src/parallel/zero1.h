// ZeRO-1 AdamW: every rank holds all parameters and a full gradient buffer, but Adam m
// and v only for its shard (shard_plan.h). One step is
//   ReduceGradients: tree reduce-scatter of the ranks' partial gradient sums (collectives.h), then
//                    the global gradient norm from the shards (fixed blocks, block order);
//   Step:            AdamW on this rank's shard only (optimizer.h AdamWUpdateRange: each element
//                    depends on its own values only), then an all-gather of the parameters.
// With world 1 this is exactly GlobalGradNorm + AdamW::Step on the whole buffer, and for any
// power-of-two world the parameters, m, v and the norm have the same bits as with world 1.
//
// Checkpoints stay world-size independent: GatherState() assembles full m and v on rank 0 (for the
// one checkpoint writer), LoadState() takes full m and v (read from any checkpoint) and keeps this
// rank's slice.
#pragma once
#include <cstdint>
#include <vector>

#include "parallel/communicator.h"
#include "parallel/shard_plan.h"
#include "tensor/flat_buffer.h"
#include "optim/adamw.h"

namespace replica::parallel {

class Zero1AdamW {
 public:
  // Buffer math (the reduce-scatter's sums, the norm's partials, scaling, the AdamW elements,
  // copies) runs on `backend`, which must outlive this object.
  Zero1AdamW(const ParamLayout& layout, const AdamWConfig& config, Communicator& comm,
             const Backend& backend = CpuBackend());

  // Collective. `grads` holds this rank's partial sum; afterwards its shard holds the global sum
  // (other elements are garbage). Returns the global gradient norm, equal on every rank.
  double ReduceGradients(FlatBuffer& grads);
  // Scales the shard of `grads` by `factor` (e.g. 1 / tokens when the loss is a mean): element-wise,
  // so identical to scaling the whole buffer in one process.
  void ScaleShard(FlatBuffer& grads, double factor) const;
  // Collective. t += 1, AdamW on the shard with clip coefficient `grad_coef`, all-gather params.
  void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double grad_coef);

  // Collective. On rank 0 fills m_full and v_full (layout-sized); ignored elsewhere (may be null).
  void GatherState(FlatBuffer* m_full, FlatBuffer* v_full);
  // Keeps this rank's slice of full-size m and v, and sets t.
  void LoadState(const FlatBuffer& m_full, const FlatBuffer& v_full, int64_t step);

  const ShardPlan& plan() const { return plan_; }
  size_t shard_begin() const { return plan_.begin(comm_.rank()); }
  size_t shard_end() const { return plan_.end(comm_.rank()); }
  int64_t step() const { return step_; }
  void set_step(int64_t t) { step_ = t; }
  const AdamWConfig& config() const { return config_; }
  Communicator& comm() { return comm_; }

 private:
  const ParamLayout& layout_;
  AdamWConfig config_;
  Communicator& comm_;
  const Backend& backend_;
  ShardPlan plan_;
  std::vector<double> decay_;
  FlatBuffer m_, v_;  // this rank's shard only
  int64_t step_ = 0;
};

}  // namespace replica::parallel
