// The optimizer as the train step and the trainer see it: one update per step, and the state a
// checkpoint stores. Two implementations: AdamW (optim/adamw.h) holds the whole state in one
// process; parallel::Zero1AdamW (parallel/zero1.h) holds this rank's shard of it. Both apply the
// same per-element update, so parameters and state have the same bits either way.
//
// The state crosses the interface only in its checkpoint form, full-size and independent of the
// world size: SaveState assembles it where the checkpoint writer is (a collective when the state
// is sharded), LoadState takes it (read from a checkpoint of any world size) and keeps what this
// process updates.
#pragma once
#include <cstdint>

#include "tensor/flat_buffer.h"

namespace replica {

// What a checkpoint holds of the optimizer (optim.safetensors): Adam m and v over the whole
// ParamLayout (layout.total_floats() each, padding zero) and t, the updates taken.
struct OptimizerState {
  FlatBuffer m, v;
  int64_t step = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // t += 1, then the update of the parameters this process updates from `grads` (the reduced
  // gradient: at least those elements hold the global sum), learning rate `lr` and clipping
  // coefficient `clip_coef` (ClipCoefficient). Collective when sharded: afterwards every rank
  // holds the same parameters.
  virtual void Step(FlatBuffer& params, const FlatBuffer& grads, double lr, double clip_coef) = 0;

  // Collective when sharded. The full state on the process that writes checkpoints (rank 0),
  // nullptr on the others. Valid until the next Step or LoadState.
  virtual const OptimizerState* SaveState() = 0;
  // Takes the full state (m and v layout-sized: Error otherwise) and keeps this process's part.
  virtual void LoadState(OptimizerState state) = 0;

  virtual int64_t step() const = 0;            // t: updates taken (skipped steps do not count)
  virtual double max_grad_norm() const = 0;    // clipping threshold (<= 0: no clipping)
};

}  // namespace replica
