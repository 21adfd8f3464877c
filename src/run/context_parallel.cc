#include "run/context_parallel.h"

#include <fmt/format.h>

#include "core/byte_size.h"
#include "ops/precision.h"

namespace replica {
namespace {

// The same run over d·I instances of T/d tokens: what one context-parallel rank holds.
RunConfig PerRankSlice(const RunConfig& c, int64_t d) {
  RunConfig s = c;
  s.data.seq_len = c.data.seq_len / d;
  s.train.global_batch_instances = c.train.global_batch_instances * d;
  s.parallel.context_parallel_degree = 1;
  return s;
}

}  // namespace

std::optional<ContextParallelPlan> PlanContextParallel(const RunConfig& c,
                                                       std::optional<uint64_t> memory) {
  const int64_t d = c.parallel.context_parallel_degree;
  if (d <= 1) return std::nullopt;
  const RunConfig slice = PerRankSlice(c, d);
  const ModelFootprint footprint = ModelFootprint::Of(slice);
  const ModelConfig& m = c.model;
  const uint64_t mu = static_cast<uint64_t>(c.train.micro_batch_instances);
  const uint64_t T = static_cast<uint64_t>(c.data.seq_len);
  const uint64_t kvd = static_cast<uint64_t>(m.num_kv_heads * m.head_dim);
  const uint64_t width =
      MatmulOperands(ParsePrecision(c.compute.precision, "config key 'compute.precision'")) ==
              Precision::kBf16
          ? 2
          : 4;

  ContextParallelPlan p;
  p.degree = d;
  p.tokens_per_rank = c.data.seq_len / d;
  p.kv_gather_bytes = 4 * 2 * mu * T * kvd;
  auto at = [&](int64_t world, Recompute policy) {
    MemoryPlan mem = PlanMemory(slice, footprint, world, policy);
    mem.activations += p.kv_gather_bytes;
    return mem;
  };
  // Worlds R = d·dp with dp dividing the global batch as a data-parallel world would.
  const int64_t I = c.train.global_batch_instances;
  WorldFit& f = p.smallest_world;
  f.searched = d * I;
  Recompute chosen = Recompute::kFull;
  int64_t planned_world = 0;
  for (int64_t dp = 1; dp <= I; ++dp) {
    const int64_t world = d * dp;
    if (!WorldProblem(c, dp).empty() || !WorldProblem(slice, world).empty()) continue;
    // The slice's plan fits what the budget leaves beside the gathered K and V.
    const uint64_t budget = MemoryBudget(c, memory, world);
    bool fits = false;
    const Recompute policy =
        ResolveRecompute(slice, footprint, world,
                         budget > p.kv_gather_bytes ? budget - p.kv_gather_bytes : 0, &fits);
    fits = fits && budget > p.kv_gather_bytes;
    const uint64_t bytes = at(world, policy).total();
    if (fits) {
      f.world = world;
      f.recompute = policy;
      f.bytes = bytes;
      chosen = policy;
      planned_world = world;
      break;
    }
    if (f.least_world == 0 || bytes < f.least_bytes) {
      f.least_bytes = bytes;
      f.least_world = world;
      chosen = policy;
      planned_world = world;
    }
  }
  if (planned_world == 0) return p;
  p.memory = at(planned_world, chosen);
  const uint64_t dp = static_cast<uint64_t>(planned_world / d);
  const uint64_t micro_batches = static_cast<uint64_t>(I) / dp / mu;
  const uint64_t per_layer_forward = (static_cast<uint64_t>(d) - 1) * 2 * mu * T * kvd * width /
                                     static_cast<uint64_t>(d);
  const uint64_t gathers = 3 + (chosen == Recompute::kFull ? 1 : 0);
  p.kv_traffic_bytes_per_step =
      static_cast<uint64_t>(m.num_layers) * micro_batches * per_layer_forward * gathers;
  return p;
}

std::string ContextParallelRefusal(const RunConfig& c, int64_t world, int64_t ranks_on_host) {
  const int64_t d = c.parallel.context_parallel_degree;
  if (d <= 1) return "";
  std::string source;
  const uint64_t budget = MemoryBudget(c, std::nullopt, ranks_on_host, &source);
  Recompute policy = Recompute::kFull;
  if (c.train.recompute == "auto") {
    bool fits = false;
    policy = ResolveRecompute(c, world, budget, &fits);
    if (fits) return "";
  } else {
    policy = ParseRecompute(c.train.recompute, "config key 'train.recompute'");
  }
  const MemoryPlan need = PlanMemory(c, world, policy);
  if (need.total() <= budget) return "";
  return fmt::format(
      "config key 'parallel.context_parallel_degree' ({}): the source config splits each "
      "{}-token sequence over {} ranks (context parallelism), which replica does not implement; "
      "computing each sequence whole on one rank needs {} per rank (activations {}, recompute "
      "{}) at {} rank(s), more than the budget of {} ({}). Give each rank that memory "
      "(parallel.memory_per_rank), shorten data.seq_len, or train a smaller model; `replica "
      "plan` shows what degree {} would need per rank",
      d, c.data.seq_len, d, FormatBytes(need.total()), FormatBytes(need.activations),
      RecomputeName(policy), world, FormatBytes(budget), source, d);
}

nlohmann::json ContextParallelPlan::ToJson() const {
  return {{"degree", degree},
          {"implemented", false},
          {"tokens_per_rank", tokens_per_rank},
          {"smallest_world", smallest_world.ToJson()},
          {"memory_per_rank_bytes", memory.total()},
          {"memory_breakdown_bytes", memory.ToJson()},
          {"kv_gather_bytes", kv_gather_bytes},
          {"kv_traffic_bytes_per_step", kv_traffic_bytes_per_step}};
}

std::string ContextParallelPlan::ToText() const {
  const int64_t world = smallest_world.world ? smallest_world.world : smallest_world.least_world;
  std::string where =
      smallest_world.world
          ? fmt::format("fits first at {} ranks ({} groups of {}), recompute {}", world,
                        world / degree, degree, RecomputeName(smallest_world.recompute))
          : fmt::format("fits at no world size up to {} (least at {} ranks)",
                        smallest_world.searched, world);
  return fmt::format(
      "context parallel  degree {} in the config: NOT implemented; replica computes each sequence "
      "whole on one rank (the same math) and plans the memory above for that\n"
      "  at degree {}     {} tokens of each instance per rank; {}: {} per rank (activations {}, of "
      "which gathered K, V {}); K/V traffic {} per rank per step",
      degree, degree, tokens_per_rank, where, FormatBytes(memory.total()),
      FormatBytes(memory.activations), FormatBytes(kv_gather_bytes),
      FormatBytes(kv_traffic_bytes_per_step));
}

}  // namespace replica
