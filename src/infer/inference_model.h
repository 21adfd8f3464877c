// The Olmo 3 forward for evaluation and parity over memory-mapped weights (model_weights.h),
// keeping no training activations: the stack runs layer by layer, each layer's weights widened to
// fp32 just before it runs (one layer's fp32 copy exists at a time, and the stored pages are
// released after), each layer the block Olmo3Model's forward runs (model/block.h), on the Backend
// given (ops/backend.h). On the same
// (fp32-representable) weights and B*T <= mlp_rows() the hidden states are therefore
// bit-identical to the training forward's, and so are ForwardLoss and ForwardLogits with
// chunk_rows >= B*T; above mlp_rows() the MLP's GEMMs run over shorter row blocks, which a GEMM
// kernel may round otherwise.
//
// Memory for tokens [B, T] (N = B*T rows): N·(3·D + 2·H·hd + 2·KV·hd + H + 1) floats of
// activations (the input, q, k, v, the attention output, its projection and h; q and k normed in
// place) plus the MLP's g, u, s and m for at most mlp_rows() rows (the MLP runs in passes of that
// many rows: row-wise, so the result is the one-pass result), one layer of fp32 weights and,
// while logits are made, the fp32 LM head [V, D]. 7B-shaped at T = 65,536: about 7.5 GB of
// activations against 19.4 GB with every buffer whole. The logits of all N
// rows exist only when asked for (ForwardLogits); ForEachLogitsChunk hands them out chunk_rows at
// a time, ForwardLoss fuses them with the cross-entropy (ops/cpu/cross_entropy.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/layer_ropes.h"
#include "infer/model_weights.h"
#include "model/olmo3.h"

namespace replica {

class InferenceModel {
 public:
  // `backend` (ops/backend.h) runs every op and must outlive the model.
  explicit InferenceModel(ModelWeights weights, const Backend& backend);

  const ModelConfig& config() const { return weights_.config(); }
  const Backend& backend() const { return *ops_; }
  const ModelWeights& weights() const { return weights_; }
  ModelWeights& mutable_weights() { return weights_; }  // e.g. to copy some into memory

  // Memory: every buffer the ops read or write (activations, widened weights, the LM head's
  // workspace, RoPE tables) comes from the backend's Allocate; `xf` arguments are such memory
  // too (backend().AllocateFloats). Tokens, labels, logits outputs and what the sinks receive are
  // host memory.

  // Receives layer l's post-RoPE keys and values [B*T, KV*hd] (the backend's memory) during
  // ForwardHidden.
  using KvSink = std::function<void(int64_t layer, const float* k, const float* v)>;
  // tokens [B, T] -> xf [B*T, D] = the final RMSNorm of the last layer's output. Token ids are
  // checked against the vocabulary (Error naming the position).
  void ForwardHidden(const int32_t* tokens, int64_t B, int64_t T, float* xf,
                     const KvSink& kv_sink = {});
  // logits = xf lm_head^T for rows [0, N), handed to sink(row0, rows, logits [rows, V]) in order,
  // chunk_rows at a time (the last chunk may be shorter).
  using LogitsSink = std::function<void(int64_t row0, int64_t rows, const float* logits)>;
  void ForEachLogitsChunk(const float* xf, int64_t N, int64_t chunk_rows, const LogitsSink& sink);
  // logits [rows, V] = xf [rows, D] lm_head^T. The fp32 LM head is widened on first use and kept
  // until ReleaseLmHead() (so two models' logits can be made chunk by chunk side by side).
  void LogitsRows(const float* xf, int64_t rows, float* logits);
  void ReleaseLmHead();

  // Full logits [B, T, V] into `logits` (what Olmo3Model::ForwardLogits computes).
  void ForwardLogits(const int32_t* tokens, int64_t B, int64_t T, float* logits);
  // Sums of CE and lse² over labels != -100 (what Olmo3Model::ForwardLoss computes).
  CrossEntropySums ForwardLoss(const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T);

  // Whether ForwardHidden drops a layer's stored pages after widening it (default true; a decoder
  // that reads the stored weights again every step turns it off).
  void set_release_pages(bool release) { release_pages_ = release; }
  // Rows per MLP pass (default kMlpRows; N <= it runs in one pass, as the training forward).
  static constexpr int64_t kMlpRows = 4096;
  int64_t mlp_rows() const { return mlp_rows_; }
  void set_mlp_rows(int64_t rows);

 private:
  void WidenLayer(int64_t l);
  void WidenLmHead();  // no-op when already widened
  void Validate(const int32_t* tokens, const int32_t* labels, int64_t N) const;

  ModelWeights weights_;
  const Backend* ops_;
  bool release_pages_ = true;
  int64_t mlp_rows_ = kMlpRows;
  FlatBuffer layer_buf_;  // one layer, fp32
  FlatBuffer lm_head_;    // [V, D] fp32 while logits are being made; empty otherwise
  FlatBuffer logits_;     // LogitsRows' staging for a backend that is not the host's
  std::vector<float> host_logits_;
  LayerRopes ropes_;
};

}  // namespace replica
