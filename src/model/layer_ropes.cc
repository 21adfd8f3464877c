#include "model/layer_ropes.h"

#include "core/error.h"

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

}  // namespace replica
