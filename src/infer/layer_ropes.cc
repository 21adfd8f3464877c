#include "infer/layer_ropes.h"

#include "core/error.h"

namespace replica {

LayerRopes::LayerRopes(const ModelConfig& config, int64_t max_positions)
    : max_positions_(max_positions) {
  Require(max_positions >= 1, "RoPE tables need at least one position (got {})", max_positions);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    const RopeParams& p = config.RopeFor(l);
    size_t t = 0;
    while (t < tables_.size() && !tables_[t].params.SameMath(p)) ++t;
    if (t == tables_.size()) tables_.push_back(MakeRopeTable(max_positions, config.head_dim, p));
    index_.push_back(t);
  }
}

void RopeRowInPlace(const RopeTable& table, int64_t pos, int64_t heads, float* x) {
  const int64_t hd = table.head_dim, half = hd / 2;
  const float* c = table.cos.data() + pos * half;
  const float* s = table.sin.data() + pos * half;
  for (int64_t h = 0; h < heads; ++h) {
    float* r = x + h * hd;
    for (int64_t j = 0; j < half; ++j) {
      const float a = r[j], b = r[j + half];
      r[j] = a * c[j] - b * s[j];
      r[j + half] = b * c[j] + a * s[j];
    }
  }
}

}  // namespace replica
