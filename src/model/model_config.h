// ModelConfig: the shape of an Olmo 3 (or Olmo 2) decoder, as data (gemma.cpp style), read from a
// Hugging Face config.json. Everything the forward/backward, FLOP counting, memory planning and
// checkpoint naming need is here; nothing else is read from config.json.
//
// RoPE is described per layer type (RopeParams, RopeFor(layer)): plain RoPE or YaRN, parsed from
// either spelling transformers writes (legacy `rope_theta` + `rope_scaling`, or `rope_parameters`,
// flat or keyed by layer type) and written back by ToHfJson in the spelling it was read in.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/rope_params.h"
#include "tensor/flat_buffer.h"

namespace replica {

enum class AttentionType { kFull, kSliding };

// How config.json spelled the RoPE settings (so ToHfJson writes them back the same way).
enum class RopeSpelling {
  kLegacy,                      // top-level "rope_theta" + "rope_scaling" (null or an object)
  kRopeParameters,              // "rope_parameters": {rope_type, rope_theta, ...} for all layers
  kRopeParametersPerLayerType,  // "rope_parameters": {"full_attention": {...}, "sliding_attention": {...}}
};

struct ModelConfig {
  std::string model_type = "olmo3";  // "olmo3" or "olmo2"
  int64_t vocab_size = 0;            // embedding / LM head rows (100352 for the 7B)
  int64_t hidden_size = 0;           // D
  int64_t intermediate_size = 0;     // I (SwiGLU hidden)
  int64_t num_layers = 0;            // L
  int64_t num_heads = 0;             // H
  int64_t num_kv_heads = 0;          // KV (H % KV == 0; KV == 1 is MQA)
  int64_t head_dim = 0;              // hd (config "head_dim", else D / H)
  double rms_norm_eps = 1e-6;
  // RoPE of the full-attention and of the sliding-window layers. With one set of settings for all
  // layers (legacy rope_scaling, or a flat rope_parameters) the scaling goes to the full layers and
  // the sliding layers keep plain RoPE with the same theta (as Olmo 3 was trained, and as
  // transformers' Olmo3Model computes it); per-layer-type rope_parameters are taken as written.
  RopeParams rope_full, rope_sliding;
  RopeSpelling rope_spelling = RopeSpelling::kLegacy;
  int64_t sliding_window = 0;        // W; 0 = no sliding layers (olmo2)
  std::vector<AttentionType> layer_types;  // one per layer
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 0;
  int64_t pad_token_id = -1, eos_token_id = -1, bos_token_id = -1;  // -1 = null
  double initializer_range = 0.02;   // std of the N(0, σ²) init of matrices (training from scratch)

  // Parses a HF config.json object. `source` names the file in error messages. Refuses unknown
  // model types, RoPE types other than default and yarn, biases, non-silu activations,
  // contradictory or missing fields.
  static ModelConfig FromHfJson(const nlohmann::json& j, const std::string& source);
  static ModelConfig FromHfFile(const std::string& path);
  nlohmann::json ToHfJson() const;  // round-trips through FromHfJson
  // config.json of a Hugging Face directory: ToHfJson, plus (legacy spelling) the same RoPE in
  // transformers 5's per-layer-type rope_parameters; reads back to the same config.
  nlohmann::json ToHfDirectoryJson() const;

  // Keys visible to query position i in layer l: min(i+1, W) on sliding layers, i+1 on full.
  int64_t Visible(int64_t layer, int64_t i) const;
  // Σ_{i<T} Visible(layer, i): the query-key pairs of a sequence of T positions in layer l (the
  // attention FLOPs of FlopsPerToken and of the plan's recomputation).
  int64_t SumVisible(int64_t layer, int64_t T) const;
  int64_t Window(int64_t layer) const;  // W for sliding layers, 0 (= unbounded) for full layers
  // The RoPE settings of layer l (rope_full or rope_sliding by layer_types[l]).
  const RopeParams& RopeFor(int64_t layer) const;
  // Plain RoPE with this theta on every layer (configs built in code).
  void SetPlainRope(double theta);
  // One line for `replica plan` and logs, e.g. "rope: theta 500000; full layers yarn (factor 8, ...)".
  std::string RopeSummary() const;
  // "" when `seq_len` positions are within the context the full-attention layers' RoPE was set
  // for (YaRN: original_max_position_embeddings × factor; plain: max_position_embeddings, when
  // given); else a sentence saying so. Positions past it are computed all the same, as OLMo-core
  // and transformers compute them: RoPE has no length limit, the model was not trained there.
  std::string ContextBeyondRope(int64_t seq_len) const;

  // Parameter table with HF names in the canonical order (fixture README order):
  // embed, per layer q,k,v,o,q_norm,k_norm,gate,up,down,post_attn_norm,post_ff_norm; norm; lm_head
  // (lm_head absent when tied).
  ParamLayout BuildLayout() const;
  int64_t NumParams() const;  // 7,298,617,344 for the 7B
  // docs/design.md §6: 6·(params excluding the input embedding) + window-aware attention, per token
  // averaged over a sequence of length T.
  double FlopsPerToken(int64_t seq_len) const;
  // The same for rows packed with documents: OLMo-core's cu_doc_lens[0, n) (0 first) over the
  // rows' positions, attention within each document, so its term counts the keys each token sees
  // in its document (SumVisible of each document's length), averaged over all positions.
  double FlopsPerTokenOfDocuments(const int32_t* cu_doc_lens, int64_t n) const;
};

// The resolved settings as a JSON object (every field, defaults filled in), for plans and logs.
nlohmann::json RopeParamsJson(const RopeParams& p);

}  // namespace replica
