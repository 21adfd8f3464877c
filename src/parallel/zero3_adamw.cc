#include "parallel/zero3_adamw.h"

#include "core/error.h"
#include "parallel/owner_collectives.h"

namespace replica::parallel {

Zero3AdamW::Zero3AdamW(const ParamLayout& layout, const AdamWConfig& config, Communicator& comm,
                       const Backend& backend, FlatBuffer* master)
    : layout_(layout),
      config_(config),
      comm_(comm),
      backend_(backend),
      plan_(layout.total_floats(), comm.world()),
      decay_(DecayPerView(layout, config)),
      master_(master),
      m_(plan_.size(comm.rank())),
      v_(plan_.size(comm.rank())) {
  RequireAdamWConfig(config_);
  Require(master == nullptr || master->size() == plan_.size(comm.rank()),
          "ZeRO-3: master parameters of {} floats for an owned range of {}",
          master ? master->size() : 0, plan_.size(comm.rank()));
}

void Zero3AdamW::Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) {
  const int r = comm_.rank();
  Require(params.size() == plan_.size(r) && grads.size() == plan_.size(r),
          "ZeRO-3: owned buffers differ from the owned range (params {}, grads {}, range {})",
          params.size(), grads.size(), plan_.size(r));
  Require(master_ == nullptr || &params == master_,
          "ZeRO-3: Step updates the master parameters it was made over");
  ++step_;
  AdamWUpdateShard({.layout = layout_, .decay = decay_, .params = params.data(),
                    .grads = grads.data(), .m = m_.data(), .v = v_.data(), .begin = plan_.begin(r),
                    .end = plan_.end(r), .config = config_, .lr = lr, .grad_coef = clip_coef,
                    .step = step_},
                   backend_);
}

const OptimizerState* Zero3AdamW::SaveState() {
  const bool root = comm_.rank() == 0;
  if (root && full_.m.size() != plan_.total()) {
    full_.m = FlatBuffer(plan_.total());
    full_.v = FlatBuffer(plan_.total());
  }
  GatherOwned(comm_, plan_, m_.data(), root ? full_.m.data() : nullptr);
  GatherOwned(comm_, plan_, v_.data(), root ? full_.v.data() : nullptr);
  full_.step = step_;
  return root ? &full_ : nullptr;
}

void Zero3AdamW::LoadState(OptimizerState state) {
  Require(state.m.size() == plan_.total() && state.v.size() == plan_.total(),
          "ZeRO-3: optimizer state has {} / {} floats of m / v, the model needs {}",
          state.m.size(), state.v.size(), plan_.total());
  Require(state.step >= 0, "ZeRO-3: step count {} is negative", state.step);
  const int r = comm_.rank();
  const int64_t n = static_cast<int64_t>(plan_.size(r));
  backend_.Copy(m_.data(), state.m.data() + plan_.begin(r), n);
  backend_.Copy(v_.data(), state.v.data() + plan_.begin(r), n);
  step_ = state.step;
}

OwnedState Zero3AdamW::Owned() {
  return {plan_.begin(comm_.rank()), plan_.end(comm_.rank()),
          master_ != nullptr ? master_->data() : nullptr, m_.data(), v_.data()};
}

void Zero3AdamW::SetStep(int64_t t) {
  Require(t >= 0, "ZeRO-3: step count {} is negative", t);
  step_ = t;
}

}  // namespace replica::parallel
