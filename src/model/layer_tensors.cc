#include "model/layer_tensors.h"

#include "model/model_config.h"

namespace replica {

const std::array<LayerTensorInfo, kLayerTensorCount>& LayerTensorTable() {
  static const std::array<LayerTensorInfo, kLayerTensorCount> table = {{
      {LayerTensor::kQProj, "self_attn.q_proj.weight", true},
      {LayerTensor::kKProj, "self_attn.k_proj.weight", true},
      {LayerTensor::kVProj, "self_attn.v_proj.weight", true},
      {LayerTensor::kOProj, "self_attn.o_proj.weight", true},
      {LayerTensor::kQNorm, "self_attn.q_norm.weight", false},
      {LayerTensor::kKNorm, "self_attn.k_norm.weight", false},
      {LayerTensor::kGateProj, "mlp.gate_proj.weight", true},
      {LayerTensor::kUpProj, "mlp.up_proj.weight", true},
      {LayerTensor::kDownProj, "mlp.down_proj.weight", true},
      {LayerTensor::kPostAttentionNorm, "post_attention_layernorm.weight", false},
      {LayerTensor::kPostFeedforwardNorm, "post_feedforward_layernorm.weight", false},
  }};
  return table;
}

std::string LayerTensorName(int64_t layer, LayerTensor t) {
  return "model.layers." + std::to_string(layer) + "." +
         LayerTensorTable()[static_cast<size_t>(t)].name;
}

std::vector<int64_t> LayerTensorShape(const ModelConfig& c, LayerTensor t) {
  const int64_t D = c.hidden_size, I = c.intermediate_size;
  const int64_t q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  switch (t) {
    case LayerTensor::kQProj: return {q, D};
    case LayerTensor::kKProj:
    case LayerTensor::kVProj: return {kv, D};
    case LayerTensor::kOProj: return {D, q};
    case LayerTensor::kQNorm: return {q};
    case LayerTensor::kKNorm: return {kv};
    case LayerTensor::kGateProj:
    case LayerTensor::kUpProj: return {I, D};
    case LayerTensor::kDownProj: return {D, I};
    case LayerTensor::kPostAttentionNorm:
    case LayerTensor::kPostFeedforwardNorm: return {D};
  }
  return {};
}

}  // namespace replica
