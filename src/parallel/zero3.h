// ZeRO-3 for the trainer (parallel.sharding: zero3, docs/distributed.md): the GradReducer
// (train/grad_reducer.h) that shards parameters, gradients and Adam state over the ranks of
// `comm`, any world size R that divides the micro-batch count (R = 1 included). It makes:
//   MakeParamStore    a Zero3ParamStore (zero3_store.h): owned fp32 master parameters and gradient
//                     accumulator; units gathered before use (the next one prefetched unless
//                     parallel.prefetch is false; matmul weights as bf16 over the bf16 backend),
//                     gradients folded into the owners in rank order as backward finishes each
//                     unit;
//   MakeAccumulation  the local micro-batches in natural order k = 0, 1, ... (global j = k·R + r),
//                     their loss sums recorded;
//   MakeOptimizer     the ZeRO-3 ShardedOptimizer (sharded_optimizer.h, kGatherOnUse) on the owned
//                     range.
// ReduceGradients folds the loss sums of all micro-batches in global order j = 0..M-1 (fp64, the
// world-1 sequential fold) and returns the norm from the owned accumulators (OwnedGradNorm).
// The result — losses, grad norms, parameters, m and v — has the bits of the world-1 run with
// train.grad_accumulation: sequential, for every R.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "optim/optimizer.h"
#include "parallel/communicator.h"
#include "parallel/zero3_store.h"
#include "run/run_config.h"
#include "train/grad_reducer.h"

namespace replica::parallel {

class Zero3 final : public GradReducer {
 public:
  // Error naming the config keys unless comm.world() divides the micro-batch count and
  // train.grad_accumulation is sequential.
  Zero3(Communicator& comm, const RunConfig& config);
  // Rank 0 prints where the ZeRO-3 time went (stderr, one line): unit gathers (the time the model
  // waits in Acquire), gradient folds, the loss fold and norm, per step; how many acquires found
  // their unit prefetched; whether gathers carry bf16.
  ~Zero3() override;

  int64_t SumTokens(int64_t local) override;
  // Needs MakeParamStore and MakeAccumulation first. `grads` is the owned accumulator. Drains the
  // store (zero3_store.h) before the optimizer writes the master parameters.
  double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                         const Backend& backend) override;
  // A ZeRO-3 ShardedOptimizer over the store's master parameters when MakeParamStore came first.
  std::unique_ptr<Optimizer> MakeOptimizer(const ParamLayout& layout,
                                           std::unique_ptr<const UpdateRule> rule,
                                           const Backend& backend) override;
  // The store of the one model this reducer serves; it must outlive that model's steps.
  std::unique_ptr<ParamStore> MakeParamStore(const ModelConfig& config,
                                             const Backend& backend) override;
  std::unique_ptr<GradAccumulation> MakeAccumulation(Olmo3Model& model) override;
  OwnedParams Owned(Olmo3Model& model) override;
  // Gathers the owned ranges on rank 0 into one full-size buffer: the checkpoint writer still takes
  // whole parameters (a sharded writer needs no gather).
  const FlatBuffer* WholeParams(Olmo3Model& model) override;
  bool CollectiveForward() const override { return true; }

  Zero3ParamStore& store();
  // Tests: the store options MakeParamStore uses instead of the ones it would choose
  // (parallel.prefetch, bf16 gathers over the bf16 backend).
  void OverrideStoreOptions(const Zero3StoreOptions& options) { override_ = options; }

 private:
  class Accumulation;
  Communicator& comm_;
  bool prefetch_ = true, bf16_gathers_ = false;
  std::optional<Zero3StoreOptions> override_;
  Zero3ParamStore* store_ = nullptr;  // owned by the model
  std::vector<double> local_scalars_;  // this step's micro-batch loss sums, k-major
  FlatBuffer whole_;                   // rank 0: WholeParams' gather target
  double reduce_s_ = 0, gathers_s_ = 0, folds_s_ = 0;
  int64_t steps_ = 0, hits_ = 0, acquires_ = 0;
};

}  // namespace replica::parallel
