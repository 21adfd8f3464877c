// How the processes of a run combine one step's partial results, as TrainStep (train_step.h) uses
// it: a single process (LocalGradReducer, here), R data-parallel ranks with ZeRO-1
// (parallel::DataParallel, src/parallel/data_parallel.h) or ZeRO-3 (parallel::Zero3,
// src/parallel/zero3.h). Rank r of R holds the micro-batches j ≡ r (mod R) of every global batch.
// With the tree accumulation it sums them locally along the fixed tree of grad_accum.h and the
// reducer combines the ranks' sums with the top levels of the same tree; with ZeRO-3 the owners
// fold every micro-batch's gradient in global order (the sequential accumulation). Either way
// every result has the bits of the single process with the same accumulation.
//
// The reducer also makes what goes with it: the optimizer that updates exactly the gradient
// elements ReduceGradients leaves reduced (all of them locally; this rank's ZeRO-1 shard with data
// parallelism), the micro-batch accumulation (grad_accumulation.h) and the parameter store the
// model runs over (model/param_store.h; the resident one unless parameters are sharded, as with
// parallel/zero3.h). TrainStep and the trainer thus run the same code for every world size and
// sharding mode.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "model/olmo3.h"
#include "model/param_store.h"
#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "tensor/flat_buffer.h"
#include "train/grad_accum.h"
#include "train/grad_accumulation.h"

namespace replica {

// The parameter elements a rank holds authoritatively: elements [begin, end) of the flat layout,
// in `buffer` (end - begin floats, element `begin` first).
struct OwnedParams {
  FlatBuffer* buffer = nullptr;
  size_t begin = 0, end = 0;
};

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  // The store to build the model over; null means the resident store (the default).
  virtual std::unique_ptr<ParamStore> MakeParamStore(const ModelConfig&, const Backend&) {
    return nullptr;
  }
  // How this rank sums its micro-batches over `model` (made once per TrainStep). Default: the
  // tree over the model's resident buffers.
  virtual std::unique_ptr<GradAccumulation> MakeAccumulation(Olmo3Model& model) {
    return std::make_unique<TreeAccumulation>(model);
  }
  // What this rank holds of the parameters (init and checkpoint loads write it). Default: all of
  // the resident buffer.
  virtual OwnedParams Owned(Olmo3Model& model) {
    return {&model.params(), 0, model.params().size()};
  }
  // Collective when the parameters are sharded: the whole parameters where the checkpoint writer
  // runs (rank 0; valid until the next step), nullptr on ranks without them. Default: the
  // resident buffer.
  virtual const FlatBuffer* WholeParams(Olmo3Model& model) { return &model.params(); }
  // True when the model's forward is collective (sharded weights are gathered from their owners):
  // then every rank runs the evaluations, not only rank 0.
  virtual bool CollectiveForward() const { return false; }
  // Σ over ranks of a per-rank count (exact).
  virtual int64_t SumTokens(int64_t local) = 0;
  // Collective. On entry `grads` and `scalars` hold this rank's partial sums. Afterwards `scalars`
  // hold the global sums on every rank and the gradient elements this rank's optimizer updates
  // hold the global sum (others are unspecified). Returns the global gradient norm (GlobalGradNorm's
  // bits), equal on every rank. Buffer math runs on `backend`.
  virtual double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                                 const Backend& backend) = 0;
  // The optimizer (zero state) that updates what ReduceGradients leaves reduced with `rule`
  // (optim/update_rule.h MakeUpdateRule: the reducer decides where the state lives, the rule what
  // the update is); its element updates run on `backend`, which must outlive it.
  virtual std::unique_ptr<Optimizer> MakeOptimizer(const ParamLayout& layout,
                                                   std::unique_ptr<const UpdateRule> rule,
                                                   const Backend& backend) = 0;
};

// One process: the partial sums are the global sums; the norm is GlobalGradNorm; the optimizer
// is AdamW over the whole buffer; the accumulation is the tree or the sequential fold.
class LocalGradReducer final : public GradReducer {
 public:
  // `accumulation`: train.grad_accumulation, "tree" or "sequential".
  explicit LocalGradReducer(std::string accumulation = "tree");
  std::unique_ptr<GradAccumulation> MakeAccumulation(Olmo3Model& model) override {
    return MakeResidentAccumulation(accumulation_, model);
  }
  int64_t SumTokens(int64_t local) override { return local; }
  double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                         const Backend& backend) override;
  std::unique_ptr<Optimizer> MakeOptimizer(const ParamLayout& layout,
                                           std::unique_ptr<const UpdateRule> rule,
                                           const Backend& backend) override;

 private:
  std::string accumulation_;
};

}  // namespace replica
