#include "model/param_store.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "model/layer_tensors.h"

namespace replica {

std::vector<size_t> UnitBounds(const ParamLayout& layout, int64_t num_layers) {
  Require(num_layers >= 1, "parameter units: {} layers", num_layers);
  std::vector<size_t> bounds;
  bounds.push_back(layout.Get("model.embed_tokens.weight").offset);
  Require(bounds[0] == 0, "parameter units: the embedding is not the layout's first tensor");
  for (int64_t l = 0; l < num_layers; ++l) {
    const size_t at =
        layout.Get(LayerTensorName(l, LayerTensor::kQProj)).offset;
    Require(at > bounds.back(), "parameter units: layer {} does not follow unit {}", l,
            bounds.size() - 1);
    bounds.push_back(at);
  }
  const size_t head = layout.Get("model.norm.weight").offset;
  Require(head > bounds.back(), "parameter units: the final norm does not follow the last layer");
  bounds.push_back(head);
  bounds.push_back(layout.total_floats());
  return bounds;
}

size_t LargestUnitFloats(const std::vector<size_t>& bounds) {
  size_t most = 0;
  for (size_t u = 0; u + 1 < bounds.size(); ++u) most = std::max(most, bounds[u + 1] - bounds[u]);
  return most;
}

LayoutSize ModelLayoutSize(const ModelConfig& config) {
  ModelConfig one = config;
  one.num_layers = 1;
  const std::vector<size_t> b = UnitBounds(one.BuildLayout(), 1);
  const size_t embedding = b[1] - b[0], layer = b[2] - b[1], head = b[3] - b[2];
  LayoutSize size;
  size.total_floats = embedding + static_cast<size_t>(config.num_layers) * layer + head;
  size.largest_unit_floats = std::max({embedding, layer, head});
  return size;
}

ResidentParamStore::ResidentParamStore(const ParamLayout& layout, int64_t num_layers,
                                       const Backend& backend)
    : bounds_(UnitBounds(layout, num_layers)),
      params_(backend.AllocateFloats(layout.total_floats())),
      grads_(backend.AllocateFloats(layout.total_floats())) {}

}  // namespace replica
