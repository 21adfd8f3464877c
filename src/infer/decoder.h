// Token-by-token decoding with a KV cache over memory-mapped weights (model_weights.h).
//
// Prefill runs the prompt through InferenceModel's layer-by-layer forward and keeps each layer's
// post-RoPE keys and values; every later Step(token) runs each layer's block (model/block.h) for
// one position on the model's Backend, its projections matrix-vector products straight from the
// stored weights (fp32 or bf16, Backend::MatVec), so a step reads each weight byte once. A full-attention layer's cache holds every position up to max_context; a
// sliding layer's holds only its window W, as a ring buffer (position p in slot p mod W): the
// query at position i sees keys i-W < j <= i, exactly the last W. The logits a step returns equal
// a full forward's logits at that position to fp32 rounding (checked by the tests).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "infer/inference_model.h"
#include "model/layer_ropes.h"
#include "model/layer_tensors.h"
#include "ops/stored_matrix.h"

namespace replica {

class Decoder {
 public:
  // Where a step reads the weight matrices from (the same bytes either way, so the same logits).
  enum class Weights {
    kMapped,  // the file mapping: page-cache pages, 4 KiB each
    kCopied,  // a copy in huge-page memory made once here (ModelWeights::CopyToMemory): a step
              // streams 2 MiB pages instead of 4 KiB ones; needs step_weight_bytes() of memory
  };
  // Copied when the matrices fit in 80% of the memory the kernel reports available, else mapped.
  static Weights AutoWeights(const InferenceModel& model);

  // max_context: positions this decoder may hold (prompt + generated), at most the model's
  // max_position_embeddings (Error otherwise). Weight pages stay resident (they are read again
  // every step).
  Decoder(InferenceModel& model, int64_t max_context, Weights weights = Weights::kMapped);

  // Prefill and Step refuse (Error) logits holding NaN or Inf: non-finite weights.
  // Runs the prompt (1 <= size <= max_context, Error naming both otherwise) from an empty cache
  // and returns the next-token logits [V] of its last position.
  std::span<const float> Prefill(std::span<const int32_t> prompt);
  // Appends `token` at position length() and returns the next-token logits [V]. Error when the
  // context is full.
  std::span<const float> Step(int32_t token);

  int64_t length() const { return length_; }  // positions in the cache
  int64_t max_context() const { return max_context_; }
  // Bytes of weights one Step reads (every matrix and the LM head; the embedding row is negligible).
  uint64_t step_weight_bytes() const { return step_weight_bytes_; }
  Weights weights() const { return weights_; }
  // The names of the matrices a step reads, in the order it reads them (layers, then the LM head).
  static std::vector<std::string> StepMatrixNames(const ModelConfig& c);

 private:
  struct LayerCache {
    int64_t capacity = 0;  // slots: W for a sliding layer, max_context for a full one
    FlatBuffer k, v;  // [capacity, KV*hd]
  };
  class Site;  // one layer's BlockSite at one position (model/block.h)
  StoredMatrix Weight(const std::string& name) const;
  // logits_ on the host; Error naming the position and the first bad vocabulary id unless they
  // are all finite.
  std::span<const float> HostLogits(int64_t pos);

  InferenceModel& model_;
  const ModelConfig& c_;
  int64_t max_context_ = 0, length_ = 0;
  uint64_t step_weight_bytes_ = 0;
  Weights weights_ = Weights::kMapped;
  // Per layer, indexed by LayerTensor: the matmul weights as stored (norm slots stay empty).
  std::vector<std::array<StoredMatrix, kLayerTensorCount>> matrices_;
  StoredMatrix head_{};
  LayerRopes ropes_;
  std::vector<LayerCache> cache_;
  // Every buffer below is the backend's (Backend::Allocate).
  std::vector<FlatBuffer> norms_;  // per layer: q_norm, k_norm, attn_norm, ff_norm (fp32)
  FlatBuffer final_norm_;
  // One position's activations.
  FlatBuffer x_, q_raw_, k_raw_, v_, q_, k_, att_, a_, h_, g_, u_, s_, m_, xf_, logits_, scores_,
      rstd_;
  std::vector<float> host_logits_;  // logits_ staged on the host when the backend is not
};

}  // namespace replica
