// What the reference's context parallelism of degree d (OLMo-core cp_config: each sequence split
// over d ranks; ring-flash-attn's llama3 strategy all-gathers K and V) implies for one rank, planned
// for a run that replica computes with every sequence whole on one rank (the same math).
//
// For memory, a rank of a context-parallel group holds T/d positions of each of its instances:
// the plan of the same run over d·I instances of T/d tokens, sharded over all R = d·dp ranks, plus
// the gathered K and V of one micro-batch's whole sequences (2·μ·T·KVd fp32 values). Traffic per
// rank and optimizer step: each layer gathers the other d−1 ranks' K and V in the forward
// ((d−1)/d · 2·μ·T·KVd values), gathers them again and reduce-scatters their gradients in the
// backward (2× that), and gathers once more when full recompute runs the forward again; every layer
// counts the whole sequence, sliding-window layers too (the strategy gathers it all); values are
// compute.precision's width (2 bytes in bf16, 4 in fp32).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "run/plan.h"
#include "run/run_config.h"

namespace replica {

struct ContextParallelPlan {
  int64_t degree = 1;
  int64_t tokens_per_rank = 0;            // T / d of every instance
  WorldFit smallest_world;                // over R = d·dp, each under its own budget
  MemoryPlan memory;                      // per rank there (or at least_world when none fits)
  uint64_t kv_gather_bytes = 0;           // of memory.activations: the gathered K and V
  uint64_t kv_traffic_bytes_per_step = 0; // received per rank per optimizer step, there

  nlohmann::json ToJson() const;
  std::string ToText() const;  // lines for `replica plan`
};

// The plan at parallel.context_parallel_degree (> 1), or nullopt at 1. `memory`: --memory.
std::optional<ContextParallelPlan> PlanContextParallel(const RunConfig& c,
                                                       std::optional<uint64_t> memory);

// Why `replica train` refuses a run whose source splits each sequence over ranks
// (parallel.context_parallel_degree > 1) when computing each sequence whole on one rank, as
// replica does, does not fit the memory budget per rank (MemoryBudget over `ranks_on_host`) with
// the cheapest recompute policy that fits, or with train.recompute as set: the planned bytes, the
// budget and its source, and what would run. "" when the degree is 1 or the run fits.
std::string ContextParallelRefusal(const RunConfig& c, int64_t world, int64_t ranks_on_host);

}  // namespace replica
