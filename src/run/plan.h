// What a run config means before anything runs (`replica plan`, docs/design.md §5): parameter count,
// window-aware FLOPs per token (ModelConfig::FlopsPerToken, docs/design.md §6), steps and tokens, LR at
// chosen steps, and the memory one data-parallel rank needs.
//
// Memory per rank (bytes), with P = the flat parameter buffer's floats (including the 16-float
// alignment padding), R ranks, μ instances per micro-batch, T = seq_len, M_r = micro-batches per
// rank per step:
//   params               4·P                   fp32 master weights (every rank holds them all)
//   grads                4·P                   fp32 gradients
//   adam                 8·⌈P/R⌉               m and v, ZeRO-1: sharded over the R ranks
//   accumulation         4·P·S(M_r)            spare gradient buffers of the micro-batch reduction
//                                              tree (S = the tree's largest stack, ⌊log2 M_r⌋)
//   checkpoint_snapshot  4·P + 8·⌈P/R⌉         the background checkpoint writer's copy
//   activations          4·A(μ·T)              the buffers Olmo3Model preallocates for one
//                                              micro-batch of N = μ·T tokens (src/model/olmo3.cc):
//     A(N) = L·N·(4D + 3·Hd + 3·KVd + 3I + H + 4)     saved per layer for backward
//          + N·(4D + 3I + 4·Hd + 4·KVd)               backward scratch shared by the layers
//          + N·(2D + 1)                               final norm input/output
//          + min(N, max(1, 8Mi / V))·V + 2·T·hd       LM-head logits chunk, RoPE tables (cos and
//                                                     sin, T·hd/2 each, for at most 2 settings)
//     (Hd = H·hd, KVd = KV·hd)
//   batch                8·(I/R)·T              token ids and labels of the rank's batch
// The sum is a planning estimate: it leaves out the allocator, BLAS workspaces, and the page cache
// of memory-mapped token files.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "run/run_config.h"

namespace replica {

struct MemoryPlan {
  uint64_t params = 0, grads = 0, adam = 0, accumulation = 0, checkpoint_snapshot = 0,
           activations = 0, batch = 0;
  uint64_t total() const {
    return params + grads + adam + accumulation + checkpoint_snapshot + activations + batch;
  }
};

struct RunPlan {
  int64_t params = 0;             // ModelConfig::NumParams()
  double flops_per_token = 0;     // ModelConfig::FlopsPerToken(seq_len)
  int64_t steps = 0;              // train.max_steps
  int64_t tokens_per_step = 0;    // global_batch_instances · seq_len
  int64_t tokens = 0;             // steps · tokens_per_step
  int64_t world = 1;
  int64_t micro_batches_per_rank = 0;
  MemoryPlan memory;
  std::map<int64_t, double> lr_at;
  std::string rope;               // ModelConfig::RopeSummary()
  nlohmann::json rope_layers;     // {"full_attention": RopeParamsJson, "sliding_attention": ...}

  nlohmann::json ToJson() const;  // {params, flops_per_token, memory_per_rank_bytes, steps, tokens,
                                  //  lr_at: {"step": lr}, rope, ...breakdown}
  std::string ToText() const;
};

// Largest number of spare buffers TreeAccumulator holds for `count` leaves.
int64_t AccumulationStackDepth(int64_t count);
// Floats of activations Olmo3Model allocates for a micro-batch of `tokens` tokens (formula above).
uint64_t ActivationFloats(const ModelConfig& m, int64_t micro_batch_instances, int64_t seq_len);

// Error when world does not divide the global batch or the rank batch is not a whole number of
// micro-batches. Steps in lr_steps must be >= 0.
RunPlan MakePlan(const RunConfig& config, int64_t world, const std::vector<int64_t>& lr_steps);

}  // namespace replica
