#include "parallel/zero1.h"

#include <cstring>

#include "core/error.h"
#include "parallel/collectives.h"

namespace replica::parallel {

Zero1AdamW::Zero1AdamW(const ParamLayout& layout, const AdamWConfig& config, Communicator& comm)
    : layout_(layout),
      config_(config),
      comm_(comm),
      plan_(layout.total_floats(), comm.world()),
      decay_(DecayPerView(layout, config)),
      m_(plan_.size(comm.rank())),
      v_(plan_.size(comm.rank())) {
  RequirePowerOfTwoWorld(comm.world());
}

double Zero1AdamW::ReduceGradients(FlatBuffer& grads) {
  Require(grads.size() == plan_.total(), "ZeRO-1: gradient buffer has {} floats, expected {}",
          grads.size(), plan_.total());
  TreeReduceScatter(comm_, grads.data(), plan_);
  return ShardedGradNorm(comm_, grads.data(), plan_);
}

void Zero1AdamW::ScaleShard(FlatBuffer& grads, double factor) const {
  float* g = grads.data();
  const int64_t lo = static_cast<int64_t>(shard_begin()), hi = static_cast<int64_t>(shard_end());
#pragma omp parallel for schedule(static)
  for (int64_t i = lo; i < hi; ++i) g[i] = static_cast<float>(static_cast<double>(g[i]) * factor);
}

void Zero1AdamW::Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double grad_coef) {
  Require(params.size() == plan_.total() && grads.size() == plan_.total(),
          "ZeRO-1: buffer sizes differ (params {}, grads {}, layout {})", params.size(),
          grads.size(), plan_.total());
  ++step_;
  AdamWUpdateRange(layout_, decay_, params.data(), grads.data(), m_.data(), v_.data(),
                   shard_begin(), shard_end(), config_, lr, grad_coef, step_);
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
  const size_t n = plan_.size(comm_.rank());
  if (n > 0) {
    std::memcpy(m_.data(), m_full.data() + shard_begin(), n * sizeof(float));
    std::memcpy(v_.data(), v_full.data() + shard_begin(), n * sizeof(float));
  }
  step_ = step;
}

}  // namespace replica::parallel
