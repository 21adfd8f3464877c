// The tensors of one decoder layer, as data: each one's Hugging Face name (after
// "model.layers.<l>."), its shape in terms of the model's dimensions, and whether only
// matmul-bearing ops read it (so a bf16-matmul backend rounds every use of it to bf16). The order
// is the parameter layout's (ModelConfig::BuildLayout), which checkpoints and ZeRO units follow.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace replica {

struct ModelConfig;

enum class LayerTensor : int {
  kQProj, kKProj, kVProj, kOProj, kQNorm, kKNorm, kGateProj, kUpProj, kDownProj,
  kPostAttentionNorm, kPostFeedforwardNorm,
};
constexpr int kLayerTensorCount = 11;

struct LayerTensorInfo {
  LayerTensor id;
  const char* name;    // e.g. "self_attn.q_proj.weight"
  bool matmul_weight;  // read only by linear layers
};

// Every layer tensor, in layout order.
const std::array<LayerTensorInfo, kLayerTensorCount>& LayerTensorTable();
// "model.layers.<layer>.<name>".
std::string LayerTensorName(int64_t layer, LayerTensor t);
// The row-major shape of tensor t of any layer of `config`.
std::vector<int64_t> LayerTensorShape(const ModelConfig& config, LayerTensor t);

}  // namespace replica
