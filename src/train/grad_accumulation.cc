#include "train/grad_accumulation.h"

#include "core/error.h"
#include "core/profile.h"

namespace replica {

namespace {

void ZeroBuffer(FlatBuffer& b, const Backend& backend) {
  ProfileScope profile_scope(ProfileCategory::kZero);
  backend.Zero(b.data(), static_cast<int64_t>(b.size()));
}

}  // namespace

TreeAccumulation::TreeAccumulation(Olmo3Model& model)
    : model_(model), acc_(model.grads().size(), 1, model.backend()) {}

const std::vector<int64_t>& TreeAccumulation::Begin(int64_t m) {
  acc_.Reset(m);
  if (static_cast<int64_t>(order_.size()) != m) order_ = MicroBatchOrder(m);
  sums_ = {};
  // Later micro-batches find the buffer zeroed by the accumulator.
  ZeroBuffer(model_.grads(), model_.backend());
  return order_;
}

void TreeAccumulation::Add(int64_t, Scalars s) { sums_ = acc_.Add(model_.grads(), s); }

SequentialAccumulation::SequentialAccumulation(Olmo3Model& model)
    : model_(model), sum_(model.backend().AllocateFloats(model.grads().size())) {}

const std::vector<int64_t>& SequentialAccumulation::Begin(int64_t m) {
  Require(m >= 1, "gradient accumulation: need at least one micro-batch, got {}", m);
  order_.resize(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) order_[static_cast<size_t>(k)] = k;
  sums_ = {};
  added_ = 0;
  ZeroBuffer(sum_, model_.backend());
  ZeroBuffer(model_.grads(), model_.backend());
  return order_;
}

void SequentialAccumulation::Add(int64_t k, Scalars s) {
  Require(k == added_ && added_ < static_cast<int64_t>(order_.size()),
          "sequential accumulation: micro-batch {} added as number {} of {}", k, added_,
          order_.size());
  ++added_;
  AddInto(sum_, model_.grads(), model_.backend());  // sum = g + sum (IEEE addition commutes)
  for (int i = 0; i < TreeAccumulator::kScalars; ++i) sums_[i] = sums_[i] + s[i];
  ZeroBuffer(model_.grads(), model_.backend());  // the next micro-batch's gradient starts at 0
}

std::unique_ptr<GradAccumulation> MakeResidentAccumulation(const std::string& mode,
                                                           Olmo3Model& model) {
  if (mode == "tree") return std::make_unique<TreeAccumulation>(model);
  if (mode == "sequential") return std::make_unique<SequentialAccumulation>(model);
  Fail("config key 'train.grad_accumulation': expected tree or sequential, got '{}'", mode);
}

}  // namespace replica
