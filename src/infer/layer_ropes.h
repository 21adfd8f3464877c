// The RoPE cos/sin table of every layer of a model (ModelConfig::RopeFor: plain RoPE, or YaRN on
// the full-attention layers), for positions [0, max_positions): one table per distinct rotation,
// shared by the layers that use it, built as Olmo3Model builds them (MakeRopeTable).
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "ops/rope_table.h"

namespace replica {

class LayerRopes {
 public:
  LayerRopes() = default;
  LayerRopes(const ModelConfig& config, int64_t max_positions);
  const RopeTable& ForLayer(int64_t layer) const { return tables_[index_[layer]]; }
  int64_t max_positions() const { return max_positions_; }

 private:
  int64_t max_positions_ = 0;
  std::vector<RopeTable> tables_;
  std::vector<size_t> index_;  // layer -> table
};

// Rotates one row x [heads, hd] (position `pos`) in place with `table` (RopeForward's formula;
// the YaRN attention factor is in the table).
void RopeRowInPlace(const RopeTable& table, int64_t pos, int64_t heads, float* x);

}  // namespace replica
