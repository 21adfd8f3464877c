// How the processes of a run combine one step's partial results, as TrainStep (train_step.h) uses
// it: a single process (LocalGradReducer, here) or R data-parallel ranks
// (parallel::DataParallel, src/parallel/data_parallel.h). Rank r of R holds the micro-batches
// j ≡ r (mod R) of every global batch and sums them locally along the fixed tree of
// grad_accum.h; the reducer combines the ranks' sums with the top levels of the same tree, so every
// result has the bits of the single process.
//
// The reducer also makes the optimizer that goes with it: the one that updates exactly the
// gradient elements ReduceGradients leaves reduced (all of them locally; this rank's ZeRO-1 shard
// with data parallelism). TrainStep thus runs the same code for any world size.
#pragma once
#include <cstdint>
#include <memory>

#include "optim/adamw.h"
#include "optim/optimizer.h"
#include "tensor/flat_buffer.h"
#include "train/grad_accum.h"

namespace replica {

class GradReducer {
 public:
  virtual ~GradReducer() = default;
  // Σ over ranks of a per-rank count (exact).
  virtual int64_t SumTokens(int64_t local) = 0;
  // Collective. On entry `grads` and `scalars` hold this rank's partial sums. Afterwards `scalars`
  // hold the global sums on every rank and the gradient elements this rank's optimizer updates
  // hold the global sum (others are unspecified). Returns the global gradient norm (GlobalGradNorm's
  // bits), equal on every rank. Buffer math runs on `backend`.
  virtual double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                                 const Backend& backend = CpuBackend()) = 0;
  // The optimizer (zero state) that updates what ReduceGradients leaves reduced; its element
  // updates run on `backend`, which must outlive it.
  virtual std::unique_ptr<Optimizer> MakeOptimizer(const ParamLayout& layout,
                                                   const AdamWConfig& config,
                                                   const Backend& backend = CpuBackend()) = 0;
};

// One process: the partial sums are the global sums; the norm is GlobalGradNorm; the optimizer
// is AdamW over the whole buffer.
class LocalGradReducer final : public GradReducer {
 public:
  int64_t SumTokens(int64_t local) override { return local; }
  double ReduceGradients(FlatBuffer& grads, TreeAccumulator::Scalars& scalars,
                         const Backend& backend = CpuBackend()) override;
  std::unique_ptr<Optimizer> MakeOptimizer(const ParamLayout& layout, const AdamWConfig& config,
                                           const Backend& backend = CpuBackend()) override;
};

}  // namespace replica
