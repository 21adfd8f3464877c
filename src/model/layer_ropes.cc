#include "model/layer_ropes.h"

#include <vector>

#include "core/error.h"
#include "ops/host_copy.h"

namespace replica {

LayerRopes::LayerRopes(const Backend& backend, const ModelConfig& config,
                       int64_t max_positions)
    : max_positions_(max_positions) {
  Require(max_positions >= 1, "RoPE tables need at least one position (got {})", max_positions);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const RopeParams& p = config.RopeFor(l);
    size_t t = 0;
    while (t < tables_.size() && !tables_[t].params.SameMath(p)) ++t;
    if (t == tables_.size()) 
      tables_.push_back(MakeRopeTable(backend, max_positions, config.head_dim, p));
    index_.push_back(t);
  }
}

int64_t LayerRopes::ReplacePlainEntries(const Backend& backend, int64_t positions,
                                        const float* cos, const float* sin) {
  Require(positions >= 0 && positions <= max_positions_,
          "RoPE entries for {} positions, the table holds {}", positions, max_positions_);
  int64_t differing = 0, replaced = 0;
  for (RopeTable& t : tables_) {
    if (t.params.type != RopeType::kDefault) continue;
    const int64_t n = positions * (t.head_dim / 2);
    std::vector<float> own(static_cast<size_t>(2 * n));
    CopyFloatsToHost(backend, own.data(), t.cos.f32(), n);
    CopyFloatsToHost(backend, own.data() + n, t.sin.f32(), n);
    for (int64_t i = 0; i < n; ++i) differing += (own[i] != cos[i]) + (own[n + i] != sin[i]);
    CopyFloatsFromHost(backend, t.cos.f32(), cos, n);
    CopyFloatsFromHost(backend, t.sin.f32(), sin, n);
    ++replaced;
  }
  Require(replaced > 0, "the model has no plain-RoPE table to replace (every layer's RoPE is YaRN)");
  return differing;
}

}  // namespace replica
