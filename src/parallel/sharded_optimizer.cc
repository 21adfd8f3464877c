#include "parallel/sharded_optimizer.h"

#include <utility>

#include "core/error.h"
#include "parallel/collectives.h"
#include "parallel/owner_collectives.h"

namespace replica::parallel {

ShardedOptimizer::ShardedOptimizer(const ParamLayout& layout,
                                   std::unique_ptr<const UpdateRule> rule, GatherPolicy policy,
                                   Communicator& comm, const Backend& backend, FlatBuffer* master)
    : rule_(std::move(rule)),
      policy_(policy),
      comm_(comm),
      backend_(backend),
      plan_(layout.total_floats(), comm.world()),
      master_(master),
      m_(backend.AllocateFloats(plan_.size(comm.rank()))),
      v_(backend.AllocateFloats(plan_.size(comm.rank()))) {
  Require(rule_ != nullptr, "{}: no update rule", what());
  if (policy_ == GatherPolicy::kAllGatherParams) {
    RequirePowerOfTwoWorld(comm.world());
    Require(master == nullptr, "ZeRO-1: every rank holds the whole parameters, not a master shard");
  }
  Require(master == nullptr || master->size() == plan_.size(comm.rank()),
          "ZeRO-3: master parameters of {} floats for an owned range of {}",
          master ? master->size() : 0, plan_.size(comm.rank()));
}

const char* ShardedOptimizer::what() const {
  return policy_ == GatherPolicy::kAllGatherParams ? "ZeRO-1" : "ZeRO-3";
}

void ShardedOptimizer::Step(FlatBuffer& params, const FlatBuffer& grads, double lr,
                            double clip_coef) {
  const bool whole = policy_ == GatherPolicy::kAllGatherParams;
  const size_t expect = whole ? plan_.total() : plan_.size(comm_.rank());
  Require(params.size() == expect && grads.size() == expect,
          "{}: buffer sizes differ from the {} (params {}, grads {}, expected {})", what(),
          whole ? "layout" : "owned range", params.size(), grads.size(), expect);
  Require(master_ == nullptr || &params == master_,
          "ZeRO-3: Step updates the master parameters it was made over");
  ++step_;
  // Whole buffers start at element 0, owned ones at element shard_begin().
  const size_t at = whole ? shard_begin() : 0;
  rule_->Apply({.begin = shard_begin(), .end = shard_end(), .params = params.data() + at,
                .grads = grads.data() + at, .m = m_.data(), .v = v_.data()},
               {.lr = lr, .grad_coef = clip_coef, .step = step_}, backend_);
  if (whole) AllGatherShards(comm_, params.data(), plan_, backend_);
}

const OptimizerState* ShardedOptimizer::SaveState() {
  const bool root = comm_.rank() == 0;
  if (root && full_.m.size() != plan_.total()) {
    full_.m = backend_.AllocateFloats(plan_.total());
    full_.v = backend_.AllocateFloats(plan_.total());
  }
  GatherOwned(comm_, plan_, m_.data(), root ? full_.m.data() : nullptr, backend_);
  GatherOwned(comm_, plan_, v_.data(), root ? full_.v.data() : nullptr, backend_);
  full_.step = step_;
  return root ? &full_ : nullptr;
}

void ShardedOptimizer::LoadState(OptimizerState state) {
  Require(state.m.size() == plan_.total() && state.v.size() == plan_.total(),
          "{}: optimizer state has {} / {} floats of m / v, the model needs {}", what(),
          state.m.size(), state.v.size(), plan_.total());
  Require(state.step >= 0, "{}: step count {} is negative", what(), state.step);
  const int64_t n = static_cast<int64_t>(plan_.size(comm_.rank()));
  backend_.Copy(m_.data(), state.m.data() + shard_begin(), n);
  backend_.Copy(v_.data(), state.v.data() + shard_begin(), n);
  step_ = state.step;
}

OwnedState ShardedOptimizer::Owned() {
  return {shard_begin(), shard_end(), master_ != nullptr ? master_->data() : nullptr, m_.data(),
          v_.data()};
}

void ShardedOptimizer::SetStep(int64_t t) {
  Require(t >= 0, "{}: step count {} is negative", what(), t);
  step_ = t;
}

}  // namespace replica::parallel
