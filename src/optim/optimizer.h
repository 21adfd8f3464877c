// The optimizer as the train step and the trainer see it: one update per step, and the state a
// checkpoint stores. Two implementations: AdamW (optim/adamw.h) holds the whole state in one
// process; parallel::ShardedOptimizer (parallel/sharded_optimizer.h) holds this rank's shard of it
// (ZeRO-1 and ZeRO-3). Both apply the same per-element UpdateRule (update_rule.h) to a span of the
// layout, so parameters and state have the same bits either way.
//
// Checkpoints are written and read through Owned(): the contiguous range of the flat layout this
// process owns (shard_plan.h; everything for one process) with pointers to its Adam m and v, and
// to its fp32 master parameters when the optimizer holds them. Each rank writes its range and
// reads back its range from a checkpoint of any world size (checkpoint/sharded_writer.h), so no
// process assembles the whole state. SaveState / LoadState are the full-size form of the same
// state, independent of the world size (SaveState is a collective that gathers it on rank 0), for
// tests and tools that compare states across world sizes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "tensor/flat_buffer.h"

namespace replica {

// The part of the state this process owns: floats [begin, end) of the flat layout. m and v point
// at end - begin floats each, element `begin` first: the optimizer's own storage, so a checkpoint
// is written from it and read back into it. params points at the authoritative fp32 parameters
// of the range when the optimizer holds them (ZeRO-3); nullptr when the model's full parameter
// buffer is authoritative (AdamW, ZeRO-1: every rank holds every parameter).
struct OwnedState {
  size_t begin = 0, end = 0;
  float* params = nullptr;
  float* m = nullptr;
  float* v = nullptr;
};

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
  // nullptr on the others, in the backend's memory. Valid until the next Step or LoadState.
  virtual const OptimizerState* SaveState() = 0;
  // Takes the full state (m and v layout-sized: Error otherwise; in the backend's memory, as
  // SaveState returns it) and keeps this process's part.
  virtual void LoadState(OptimizerState state) = 0;

  // This process's range and storage (allocated, zero, before the first Step). Not collective.
  virtual OwnedState Owned() = 0;
  // Sets t, after a checkpoint's m and v were read into Owned() (Error when negative).
  virtual void SetStep(int64_t t) = 0;

  virtual int64_t step() const = 0;            // t: updates taken (skipped steps do not count)
  virtual double max_grad_norm() const = 0;    // clipping threshold (<= 0: no clipping)
};

}  // namespace replica
