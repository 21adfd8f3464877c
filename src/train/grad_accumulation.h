// How one rank turns the gradients of its micro-batches of a step into what the GradReducer
// reduces (docs/design.md §2.3), as TrainStep (train_step.h) drives it:
//   order = Begin(m); for k in order: model.ForwardBackward(micro-batch k); Add(k, its loss sums);
//   then grads(), scalars() go to GradReducer::ReduceGradients and the optimizer updates params()
//   with grads().
// Two strategies over the model's resident gradient buffer live here:
//   TreeAccumulation        the evens-first pairwise tree of grad_accum.h (train.grad_accumulation
//                           "tree"): order MicroBatchOrder(m), ⌊log2 m⌋ spare gradient buffers;
//   SequentialAccumulation  the left fold in natural order (train.grad_accumulation "sequential"):
//                           each micro-batch's gradient is computed into the zeroed model buffer,
//                           then sum = sum + g elementwise (sum starts at 0), the loss sums fold
//                           the same way in fp64; one extra gradient buffer.
// A sharded store folds inside the model's backward instead (parallel/zero3.h makes its own).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/olmo3.h"
#include "tensor/flat_buffer.h"
#include "train/grad_accum.h"

namespace replica {

class GradAccumulation {
 public:
  using Scalars = TreeAccumulator::Scalars;
  virtual ~GradAccumulation() = default;
  // Starts a step of `m` local micro-batches (m >= 1) and returns the order in which to run them
  // (local indices 0..m-1).
  virtual const std::vector<int64_t>& Begin(int64_t m) = 0;
  // Micro-batch k has run its forward and backward; `s` are its loss sums (ce, lse²).
  virtual void Add(int64_t k, Scalars s) = 0;
  // After the last Add: this rank's summed gradient and loss sums, and the parameters an
  // optimizer step updates from that gradient (the same elements).
  virtual FlatBuffer& grads() = 0;
  virtual Scalars scalars() const = 0;
  virtual FlatBuffer& params() = 0;
};

class TreeAccumulation final : public GradAccumulation {
 public:
  explicit TreeAccumulation(Olmo3Model& model);
  const std::vector<int64_t>& Begin(int64_t m) override;
  void Add(int64_t k, Scalars s) override;
  FlatBuffer& grads() override { return model_.grads(); }
  Scalars scalars() const override { return sums_; }
  FlatBuffer& params() override { return model_.params(); }

 private:
  Olmo3Model& model_;
  TreeAccumulator acc_;  // its spare buffers live across steps
  std::vector<int64_t> order_;
  Scalars sums_{};
};

class SequentialAccumulation final : public GradAccumulation {
 public:
  explicit SequentialAccumulation(Olmo3Model& model);
  const std::vector<int64_t>& Begin(int64_t m) override;
  void Add(int64_t k, Scalars s) override;
  FlatBuffer& grads() override { return sum_; }
  Scalars scalars() const override { return sums_; }
  FlatBuffer& params() override { return model_.params(); }

 private:
  Olmo3Model& model_;
  FlatBuffer sum_;  // the running sum; the model's buffer holds one micro-batch's gradient
  std::vector<int64_t> order_;
  Scalars sums_{};
  int64_t added_ = 0;
};

// "tree" or "sequential" (the config key's values) over the model's resident buffers; Error
// naming train.grad_accumulation otherwise.
std::unique_ptr<GradAccumulation> MakeResidentAccumulation(const std::string& mode,
                                                           Olmo3Model& model);

}  // namespace replica
