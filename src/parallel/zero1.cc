#include "parallel/zero1.h"

#include "core/error.h"
#include "parallel/collectives.h"

namespace replica::parallel {

Zero1AdamW::Zero1AdamW(const ParamLayout& layout, const AdamWConfig& config, Communicator& comm,
                       const Backend& backend)
    : layout_(layout),
      config_(config),
      comm_(comm),
      backend_(backend),
      plan_(layout.total_floats(), comm.world()),
      decay_(DecayPerView(layout, config)),
      m_(plan_.size(comm.rank())),
      v_(plan_.size(comm.rank())) {
  RequirePowerOfTwoWorld(comm.world());
  RequireAdamWConfig(config_);
}

void Zero1AdamW::Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) {
  Require(params.size() == plan_.total() && grads.size() == plan_.total(),
          "ZeRO-1: buffer sizes differ (params {}, grads {}, layout {})", params.size(),
          grads.size(), plan_.total());
  ++step_;
  AdamWUpdateRange({.layout = layout_, .decay = decay_, .params = params.data(),
                    .grads = grads.data(), .m = m_.data(), .v = v_.data(), .begin = shard_begin(),
                    .end = shard_end(), .config = config_, .lr = lr, .grad_coef = clip_coef,
                    .step = step_},
                   backend_);
  AllGatherShards(comm_, params.data(), plan_);
}

const OptimizerState* Zero1AdamW::SaveState() {
  const bool root = comm_.rank() == 0;
  if (root && full_.m.size() != plan_.total()) {
    full_.m = FlatBuffer(plan_.total());
    full_.v = FlatBuffer(plan_.total());
  }
  GatherShards(comm_, m_.data(), root ? full_.m.data() : nullptr, plan_);
  GatherShards(comm_, v_.data(), root ? full_.v.data() : nullptr, plan_);
  full_.step = step_;
  return root ? &full_ : nullptr;
}

void Zero1AdamW::LoadState(OptimizerState state) {
  Require(state.m.size() == plan_.total() && state.v.size() == plan_.total(),
          "ZeRO-1: optimizer state has {} / {} floats of m / v, the model needs {}",
          state.m.size(), state.v.size(), plan_.total());
  Require(state.step >= 0, "ZeRO-1: step count {} is negative", state.step);
  const int64_t n = static_cast<int64_t>(plan_.size(comm_.rank()));
  backend_.Copy(m_.data(), state.m.data() + shard_begin(), n);
  backend_.Copy(v_.data(), state.v.data() + shard_begin(), n);
  step_ = state.step;
}

OwnedState Zero1AdamW::Owned() {
  return {shard_begin(), shard_end(), nullptr, m_.data(), v_.data()};
}

void Zero1AdamW::SetStep(int64_t t) {
  Require(t >= 0, "ZeRO-1: step count {} is negative", t);
  step_ = t;
}

}  // namespace replica::parallel
