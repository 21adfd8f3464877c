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
}

double Zero1AdamW::ReduceGradients(FlatBuffer& grads) {
  Require(grads.size() == plan_.total(), "ZeRO-1: gradient buffer has {} floats, expected {}",
          grads.size(), plan_.total());
  TreeReduceScatter(comm_, grads.data(), plan_, backend_);
  return ShardedGradNorm(comm_, grads.data(), plan_, backend_);
}

void Zero1AdamW::ScaleShard(FlatBuffer& grads, double factor) const {
  backend_.Scale(grads.data() + shard_begin(), static_cast<int64_t>(shard_end() - shard_begin()),
                 factor);
}

void Zero1AdamW::Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double grad_coef) {
  Require(params.size() == plan_.total() && grads.size() == plan_.total(),
          "ZeRO-1: buffer sizes differ (params {}, grads {}, layout {})", params.size(),
          grads.size(), plan_.total());
  ++step_;
  AdamWUpdateRange(layout_, decay_, params.data(), grads.data(), m_.data(), v_.data(),
                   shard_begin(), shard_end(), config_, lr, grad_coef, step_, backend_);
  AllGatherShards(comm_, params.data(), plan_);
}

void Zero1AdamW::GatherState(FlatBuffer* m_full, FlatBuffer* v_full) {
  const bool root = comm_.rank() == 0;
  if (root) {
    Require(m_full != nullptr && v_full != nullptr && m_full->size() == plan_.total() &&
                v_full->size() == plan_.total(),
            "ZeRO-1: rank 0 needs full-size m and v buffers ({} floats) to gather into",
            plan_.total());
  }
  GatherShards(comm_, m_.data(), root ? m_full->data() : nullptr, plan_);
  GatherShards(comm_, v_.data(), root ? v_full->data() : nullptr, plan_);
}

void Zero1AdamW::LoadState(const FlatBuffer& m_full, const FlatBuffer& v_full, int64_t step) {
  Require(m_full.size() == plan_.total() && v_full.size() == plan_.total(),
          "ZeRO-1: optimizer state has {} / {} floats, expected {}", m_full.size(), v_full.size(),
          plan_.total());
  const int64_t n = static_cast<int64_t>(plan_.size(comm_.rank()));
  backend_.Copy(m_.data(), m_full.data() + shard_begin(), n);
  backend_.Copy(v_.data(), v_full.data() + shard_begin(), n);
  step_ = step;
}

}  // namespace replica::parallel
