// Where Olmo3Model finds its weights and puts its gradients, one unit at a time (docs/design.md §2.8).
//
// A unit is a contiguous range of the flat parameter layout (ModelConfig::BuildLayout), in layout
// order: unit 0 = the embedding, units 1..L = layers 0..L-1, unit L+1 = the final norm and (untied)
// the LM head. With tied embeddings the LM head is unit 0's embedding. UnitBounds gives the L+3
// float offsets that delimit them (unit u = [bounds[u], bounds[u+1]), padding included).
//
// The model's promises to a store: it calls Acquire(u) before it reads any weight of unit u and
// Release(u) after its last read of that use; it calls Grads(u) before it adds the first gradient
// of unit u in a micro-batch and GradsDone(u) after the last backward op of unit u in that
// micro-batch (the order is L+1, L, ..., 1, 0). Forward-only calls (loss, logits) acquire and
// release but never ask for gradients. The calls depend only on the model shape, never on the
// data, so every rank of a job makes the same calls in the same order (a store may make them
// collective).
//
// A store's promises to the model: Acquire returns the unit's weights laid out as in the flat
// layout relative to the unit's first float (valid until Release); Grads returns a buffer of the
// unit's size into which the backward ACCUMULATES (valid until GradsDone).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "ops/backend.h"
#include "tensor/flat_buffer.h"

namespace replica {

class ParamStore {
 public:
  virtual ~ParamStore() = default;
  virtual const float* Acquire(int unit) = 0;
  virtual void Release(int unit) = 0;
  virtual float* Grads(int unit) = 0;
  virtual void GradsDone(int unit) = 0;
};

// The L+3 offsets delimiting the units of `layout` (a layout of BuildLayout with `num_layers`
// layers): bounds[0] = 0, bounds[u] = offset of unit u's first tensor, bounds[L+2] =
// layout.total_floats(). Error when the layout is not a model layout of that depth.
std::vector<size_t> UnitBounds(const ParamLayout& layout, int64_t num_layers);
// The floats of the largest unit of `bounds` (UnitBounds): what one unit buffer of a store that
// gathers units holds (parallel/zero3_store.h), and what `replica plan` counts for it.
size_t LargestUnitFloats(const std::vector<size_t>& bounds);

// The size of a model's flat layout and of its largest unit, without naming every layer's tensors:
// every layer holds the same tensors, each aligned on its own, so a layer spans the same floats
// wherever it starts and a one-layer layout gives every unit's size. Equal to
// BuildLayout().total_floats() and LargestUnitFloats(UnitBounds(...)) of the whole model, in time
// independent of the layer count (the planner sizes 65,536-layer configs with it).
struct LayoutSize {
  size_t total_floats = 0;
  size_t largest_unit_floats = 0;
};
LayoutSize ModelLayoutSize(const ModelConfig& config);

// The whole model in memory: full parameters and a full gradient buffer (the default store, and
// what every single-process and ZeRO-1 run uses). Acquire/Grads return pointers into them; Release
// and GradsDone do nothing; the gradient buffer is never zeroed here (its owner zeroes it), so
// successive backward passes accumulate into it.
class ResidentParamStore final : public ParamStore {
 public:
  // Parameters and gradients in `backend`'s memory (Backend::AllocateFloats).
  ResidentParamStore(const ParamLayout& layout, int64_t num_layers, const Backend& backend);
  const float* Acquire(int unit) override { return params_.data() + bounds_.at(static_cast<size_t>(unit)); }
  void Release(int) override {}
  float* Grads(int unit) override { return grads_.data() + bounds_.at(static_cast<size_t>(unit)); }
  void GradsDone(int) override {}

  FlatBuffer& params() { return params_; }
  FlatBuffer& grads() { return grads_; }

 private:
  std::vector<size_t> bounds_;
  FlatBuffer params_, grads_;
};

}  // namespace replica
