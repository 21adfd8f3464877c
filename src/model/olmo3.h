// The Olmo 3 decoder on flat buffers (docs/design.md §2, §3): parameters and gradients are laid out
// by ModelConfig::BuildLayout() and reached one unit at a time through a ParamStore
// (model/param_store.h): by default a ResidentParamStore holding both whole, which params() and
// grads() expose; a sharded store (ZeRO-3) gathers each unit's weights when the model acquires
// them. Activations are preallocated for a maximum micro-batch shape, so a step allocates nothing;
// the recompute policy (model/recompute.h) decides how much of them a layer keeps for the
// backward, and changes no bit of any result. Every computation runs on the Backend the model
// is built over (ops/backend.h; the fp32 CPU one unless another is given), which the training step
// reads back through backend() for its own buffer math.
#pragma once
#include <cstdint>
#include <memory>

#include "model/model_config.h"
#include "model/param_store.h"
#include "model/recompute.h"
#include "ops/backend.h"
#include "tensor/flat_buffer.h"

namespace replica {

class Olmo3Model {
 public:
  // `backend` must outlive the model.
  Olmo3Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq,
             const Backend& backend, Recompute recompute = Recompute::kNone);
  // The same over `store` (units as UnitBounds(layout(), num_layers) cut them).
  Olmo3Model(const ModelConfig& config, int64_t max_batch, int64_t max_seq, const Backend& backend,
             std::unique_ptr<ParamStore> store, Recompute recompute = Recompute::kNone);
  ~Olmo3Model();

  // Floats of the activation arena (saved values, working set, head buffers, gradient scratch)
  // a model of this shape allocates under `recompute`; the LM head's workspace and the RoPE tables
  // are not in it.
  static uint64_t ActivationArenaFloats(const ModelConfig& config, int64_t max_batch,
                                        int64_t max_seq, Recompute recompute);
  Recompute recompute() const;
  uint64_t activation_arena_floats() const;  // what this model allocated
  uint64_t lm_head_workspace_bytes() const;  // what its LM head workspace holds now

  const ModelConfig& config() const;
  const ParamLayout& layout() const;
  // The resident store's whole buffers; Error when the model runs over another store.
  FlatBuffer& params();
  FlatBuffer& grads();
  ParamStore& store();
  const Backend& backend() const;
  // LayerRopes::ReplacePlainEntries on this model's tables.
  int64_t ReplacePlainRopeEntries(int64_t positions, const float* cos, const float* sin);

  // Forward and backward on tokens/labels [B, T] (B <= max_batch, T <= max_seq). Gradients of
  //   grad_scale · Σ_tokens (CE + z_loss_multiplier · lse²)
  // are ACCUMULATED (+=) into the store's unit gradients (grads() for the resident store). Returns
  // the unscaled sums.
  //
  // Packed instances (all three calls): cu_doc_lens, when given, holds OLMo-core's cumulative
  // document lengths over the B·T flattened positions (num_cu_doc_lens entries from 0 to B·T; no
  // document crosses a row; ops/document_mask.h). Each document is then computed as if alone, as
  // OLMo-core's model does with cu_doc_lens: attention sees only the query's own document (within
  // the layer's window) and RoPE positions restart at 0 in every document. Null = one document
  // per row, the same bits as without the argument.
  CrossEntropySums ForwardBackward(const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T,
                           double grad_scale, double z_loss_multiplier,
                           const int32_t* cu_doc_lens = nullptr, int64_t num_cu_doc_lens = 0);
  // Loss only: no logits tensor of [B, T, V] is formed.
  CrossEntropySums ForwardLoss(const int32_t* tokens, const int32_t* labels, int64_t B, int64_t T,
                               const int32_t* cu_doc_lens = nullptr, int64_t num_cu_doc_lens = 0);
  // Full logits [B, T, V] into `logits`, host memory (for parity and evaluation).
  void ForwardLogits(const int32_t* tokens, int64_t B, int64_t T, float* logits,
                     const int32_t* cu_doc_lens = nullptr, int64_t num_cu_doc_lens = 0);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace replica
