// The RoPE cos/sin table of every layer of a model (ModelConfig::RopeFor: plain RoPE, or YaRN on
// the full-attention layers), for positions [0, max_positions): one table per distinct rotation,
// shared by the layers that use it, built by the backend whose rope ops read it (MakeRopeTable:
// its entries and its memory). Training, evaluation and decoding all read their tables from here.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "ops/backend.h"
#include "ops/rope_table.h"

namespace replica {

class LayerRopes {
 public:
  LayerRopes() = default;
  LayerRopes(const Backend& backend, const ModelConfig& config, int64_t max_positions);
  const RopeTable& ForLayer(int64_t layer) const { return tables_[index_[layer]]; }
  int64_t max_positions() const { return max_positions_; }
  // Puts given entries in place of the plain-RoPE table's (cos and sin [positions, head_dim / 2],
  // positions <= max_positions(); the rest of the table is kept): another stack's table, so that
  // a comparison with it leaves its libm's sin and cos out. Returns how many of the replaced
  // entries differed (cos and sin counted apart). Error when the model has no plain-RoPE table.
  int64_t ReplacePlainEntries(const Backend& backend, int64_t positions, const float* cos,
                              const float* sin);

 private:
  int64_t max_positions_ = 0;
  std::vector<RopeTable> tables_;
  std::vector<size_t> index_;  // layer -> table
};

}  // namespace replica
