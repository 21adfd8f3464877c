#include "run/plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/byte_size.h"
#include "core/error.h"
#include "core/human_count.h"
#include "core/pairwise_tree.h"
#include "core/plural.h"
#include "checkpoint/sharded_format.h"
#include "model/model_sizes.h"
#include "model/olmo3.h"
#include "model/param_store.h"
#include "ops/precision.h"
#include "optim/shard_bounds.h"

namespace replica {

namespace {

bool PowerOfTwo(int64_t x) { return x >= 1 && (x & (x - 1)) == 0; }

}  // namespace

uint64_t RuntimeBytes(int64_t world) {
  return (world > 1 ? kRuntimeMpiMiB : kRuntimeMiB) << 20;
}

double RecomputeFlopsPerToken(const ModelConfig& m, int64_t seq_len, Recompute policy) {
  const double D = m.hidden_size, I = m.intermediate_size;
  const double Hd = static_cast<double>(m.num_heads * m.head_dim),
               KVd = static_cast<double>(m.num_kv_heads * m.head_dim);
  double flops = 0;
  for (int64_t l = 0; l + 1 < m.num_layers; ++l) {
    if (policy == Recompute::kMlp) flops += 6 * D * I;
    if (policy == Recompute::kFull) {
      flops += 2 * (D * (2 * Hd + 2 * KVd) + 3 * D * I) +
               4 * Hd * static_cast<double>(m.SumVisible(l, seq_len)) /
                   static_cast<double>(seq_len);
    }
  }
  return flops;
}

std::string WorldProblem(const RunConfig& c, int64_t world) {
  if (world < 1) return fmt::format("expected at least 1 rank, got {}", world);
  const int64_t I = c.train.global_batch_instances, mu = c.train.micro_batch_instances;
  if (I % world != 0)
    return fmt::format("does not divide train.global_batch_instances ({})", I);
  if ((I / world) % mu != 0)
    return fmt::format(
        "the rank batch ({} instances) is not a whole number of micro-batches of "
        "train.micro_batch_instances ({})",
        I / world, mu);
  const int64_t M = I / mu;
  if (world > 1 && c.parallel.sharding == "zero1") {
    if (c.train.grad_accumulation != "tree")
      return "parallel.sharding zero1 with more than one rank needs train.grad_accumulation: tree";
    if (!PowerOfTwo(world)) return "parallel.sharding zero1 needs a power-of-two world size";
    if (!PowerOfTwo(M))
      return fmt::format("parallel.sharding zero1 with more than one rank needs a power-of-two "
                         "micro-batch count (the global batch has {})", M);
  }
  return "";
}

ModelFootprint ModelFootprint::Of(const RunConfig& c) {
  const LayoutSize layout = ModelLayoutSize(c.model);
  ModelFootprint f;
  f.params_floats = layout.total_floats;
  f.largest_unit_floats = layout.largest_unit_floats;
  for (Recompute r : {Recompute::kNone, Recompute::kMlp, Recompute::kFull})
    f.arena_floats[static_cast<int>(r)] = Olmo3Model::ActivationArenaFloats(
        c.model, c.train.micro_batch_instances, c.data.seq_len, r);
  f.step_scratch = TrainingStepScratch(
      c.model, c.train.micro_batch_instances * c.data.seq_len, c.compute.device,
      ParsePrecision(c.compute.precision, "config key 'compute.precision'"));
  f.rope_table_bytes = RopeTableBytes(c.model, c.data.seq_len);
  return f;
}

MemoryPlan PlanMemory(const RunConfig& c, int64_t world, Recompute policy) {
  return PlanMemory(c, ModelFootprint::Of(c), world, policy);
}

MemoryPlan PlanMemory(const RunConfig& c, const ModelFootprint& f, int64_t world,
                      Recompute policy) {
  const std::string problem = WorldProblem(c, world);
  Require(problem.empty(), "world size {}: {}", world, problem);
  const ModelConfig& m = c.model;
  const uint64_t P = f.params_floats;
  const uint64_t S = LargestShardFloats(P, static_cast<int>(world));
  const int64_t mu = c.train.micro_batch_instances, T = c.data.seq_len;
  const int64_t M_r = c.train.global_batch_instances / world / mu;
  const bool zero3 = c.parallel.sharding == "zero3";
  MemoryPlan mem;
  const bool bf16_matmuls =
      MatmulOperands(ParsePrecision(c.compute.precision, "config key 'compute.precision'")) ==
      Precision::kBf16;
  if (zero3) {
    mem.params = 4 * S;
    mem.grads = 4 * S;
    mem.adam = 8 * S;
    // Gathered weights (none at R = 1: every unit is read in place from the master shard) and
    // the prefetch in flight, unit gradients, and the ordered fold's receive buffer (R > 1; the
    // largest part of a unit one rank owns, at most min(U, S) floats); a
    // tied LM head holds units L+1 and 0 together. bf16 gathers pack the owned part of a unit
    // (at most min(U, S) floats, 2 bytes each but for the few fp32 norm gains) into one of two
    // staging buffers (one without prefetch).
    const uint64_t per = m.tie_word_embeddings ? 2 : 1;
    const uint64_t prefetch = c.parallel.prefetch ? 1 : 0;
    const uint64_t U = f.largest_unit_floats;
    mem.unit_buffers =
        4 * U * ((world > 1 ? per + prefetch : 0) + per) +
        (world > 1 ? 4 * std::min(U, S) : 0) +
        (world > 1 && bf16_matmuls ? (1 + prefetch) * 2 * std::min(U, S) : 0);
  } else {
    mem.params = 4 * P;
    mem.grads = 4 * P;
    mem.adam = 8 * (world > 1 ? S : P);
    mem.accumulation = c.train.grad_accumulation == "sequential"
                           ? 4 * P
                           : 4 * P * static_cast<uint64_t>(PairwiseTreeSpareBuffers(M_r));
  }
  // Every rank writes the range it owns (the sharded checkpoint, any sharding): the background
  // snapshot of its params, m and v, and its shard file, mapped while the manifest hashes it.
  mem.checkpoint_snapshot = ShardStateBytes(S);
  mem.checkpoint_file_map = ShardStateBytes(S);
  const StepScratch& scratch = f.step_scratch;
  mem.activations = 4 * f.arena_floats[static_cast<int>(policy)] + scratch.lm_head_workspace +
                    f.rope_table_bytes;
  mem.weight_copies = scratch.weight_copies;
  mem.gemm_scratch = scratch.operand_scratch + scratch.op_scratch;
  mem.batch = 8 * static_cast<uint64_t>(mu * M_r * T);
  mem.runtime = RuntimeBytes(world);
  return mem;
}

uint64_t MemoryBudget(const RunConfig& c, std::optional<uint64_t> memory, int64_t ranks_on_host,
                      std::string* source) {
  auto say = [&](std::string s) {
    if (source) *source = std::move(s);
  };
  if (memory && *memory > 0) {
    say("--memory");
    return *memory;
  }
  const uint64_t configured =
      ParseByteSize(c.parallel.memory_per_rank, "config key 'parallel.memory_per_rank'");
  if (configured > 0) {
    say("parallel.memory_per_rank");
    return configured;
  }
  const int64_t ranks = std::max<int64_t>(1, ranks_on_host);
  say(fmt::format("this machine's physical memory / {}", ranks));
  return PhysicalMemoryBytes() / static_cast<uint64_t>(ranks);
}

Recompute ResolveRecompute(const RunConfig& c, int64_t world, uint64_t budget, bool* fits) {
  return ResolveRecompute(c, ModelFootprint::Of(c), world, budget, fits);
}

Recompute ResolveRecompute(const RunConfig& c, const ModelFootprint& f, int64_t world,
                           uint64_t budget, bool* fits) {
  std::vector<Recompute> candidates = {Recompute::kNone, Recompute::kMlp, Recompute::kFull};
  if (c.train.recompute != "auto")
    candidates = {ParseRecompute(c.train.recompute, "config key 'train.recompute'")};
  for (Recompute r : candidates) {
    if (PlanMemory(c, f, world, r).total() <= budget) {
      if (fits) *fits = true;
      return r;
    }
  }
  if (fits) *fits = false;
  return candidates.back();
}

RunPlan MakePlan(const RunConfig& c, const PlanOptions& o) {
  const int64_t world = o.world;
  const std::string problem = WorldProblem(c, world);
  Require(problem.empty(), "--world {}: {}", world, problem);
  const int64_t I = c.train.global_batch_instances, mu = c.train.micro_batch_instances;
  RunPlan p;
  p.params = c.model.NumParams();
  p.flops_per_token = c.model.FlopsPerToken(c.data.seq_len);
  p.steps = c.train.max_steps;
  p.tokens_per_step = c.TokensPerStep();
  p.tokens = p.steps * p.tokens_per_step;
  p.world = world;
  p.rope = c.model.RopeSummary();
  p.rope_layers = {{"full_attention", RopeParamsJson(c.model.rope_full)},
                   {"sliding_attention", RopeParamsJson(c.model.rope_sliding)}};
  p.micro_batches_per_rank = I / world / mu;
  p.sharding = c.parallel.sharding;
  p.grad_accumulation = c.train.grad_accumulation;
  p.precision = c.compute.precision;
  p.recompute_requested = c.train.recompute;

  const ModelFootprint footprint = ModelFootprint::Of(c);
  p.memory_budget = MemoryBudget(c, o.memory, world, &p.memory_budget_source);
  for (Recompute r : {Recompute::kNone, Recompute::kMlp, Recompute::kFull})
    p.total_by_recompute[RecomputeName(r)] = PlanMemory(c, footprint, world, r).total();
  p.recompute = ResolveRecompute(c, footprint, world, p.memory_budget, &p.fits);
  p.memory = PlanMemory(c, footprint, world, p.recompute);
  p.recompute_flops_per_token = RecomputeFlopsPerToken(c.model, c.data.seq_len, p.recompute);

  // The smallest world size that fits, each size under its own budget (a --memory or
  // parallel.memory_per_rank is the same for every size; physical memory is split over them).
  auto smallest = [&](const RunConfig& cfg) {
    WorldFit f;
    f.searched = I;
    for (int64_t r = 1; r <= I; ++r) {
      if (!WorldProblem(cfg, r).empty()) continue;
      bool fits = false;
      const Recompute policy =
          ResolveRecompute(cfg, footprint, r, MemoryBudget(cfg, o.memory, r), &fits);
      const uint64_t bytes = PlanMemory(cfg, footprint, r, policy).total();
      if (fits) {
        f.world = r;
        f.recompute = policy;
        f.bytes = bytes;
        break;
      }
      if (f.least_world == 0 || bytes < f.least_bytes) f.least_bytes = bytes, f.least_world = r;
    }
    return f;
  };
  p.smallest_world = smallest(c);
  // The prefetch's extra unit buffer can be what decides the fit: say where the run fits without.
  if (c.parallel.sharding == "zero3" && c.parallel.prefetch) {
    RunConfig off = c;
    off.parallel.prefetch = false;
    const WorldFit f = smallest(off);
    if (f.world > 0 && (p.smallest_world.world == 0 || f.world < p.smallest_world.world))
      p.smallest_world_without_prefetch = f;
  }

  for (int64_t s : o.lr_steps) {
    Require(s >= 0, "--lr-at: steps must be >= 0, got {}", s);
    p.lr_at[s] = LrAt(c.optim.schedule, c.optim.lr, s);
  }
  return p;
}

nlohmann::json MemoryPlan::ToJson() const {
  return {{"params", params},
          {"grads", grads},
          {"adam", adam},
          {"accumulation", accumulation},
          {"unit_buffers", unit_buffers},
          {"checkpoint_snapshot", checkpoint_snapshot},
          {"checkpoint_file_map", checkpoint_file_map},
          {"activations", activations},
          {"weight_copies", weight_copies},
          {"gemm_scratch", gemm_scratch},
          {"batch", batch},
          {"runtime", runtime}};
}

nlohmann::json WorldFit::ToJson() const {
  nlohmann::json j = {{"world", world == 0 ? nlohmann::json(nullptr) : nlohmann::json(world)},
                      {"searched_up_to", searched}};
  if (world > 0) {
    j["recompute"] = RecomputeName(recompute);
    j["memory_per_rank_bytes"] = bytes;
  } else {
    j["least_memory_per_rank_bytes"] = least_bytes;
    j["least_memory_world"] = least_world;
  }
  return j;
}

nlohmann::json RunPlan::ToJson() const {
  nlohmann::json lr = nlohmann::json::object();
  for (const auto& [s, v] : lr_at) lr[std::to_string(s)] = v;
  nlohmann::json by_policy = nlohmann::json::object();
  for (const auto& [k, v] : total_by_recompute) by_policy[k] = v;
  nlohmann::json smallest = smallest_world.ToJson();
  if (const WorldFit& g = smallest_world_without_prefetch; g.world > 0) {
    smallest["without_prefetch"] = {{"world", g.world},
                                    {"recompute", RecomputeName(g.recompute)},
                                    {"memory_per_rank_bytes", g.bytes}};
  }
  return {
      {"params", params},
      {"flops_per_token", flops_per_token},
      {"memory_per_rank_bytes", memory.total()},
      {"steps", steps},
      {"tokens", tokens},
      {"lr_at", lr},
      {"tokens_per_step", tokens_per_step},
      {"world", world},
      {"micro_batches_per_rank", micro_batches_per_rank},
      {"sharding", sharding},
      {"grad_accumulation", grad_accumulation},
      {"precision", precision},
      {"recompute_requested", recompute_requested},
      {"recompute", RecomputeName(recompute)},
      {"recompute_flops_per_token", recompute_flops_per_token},
      {"recompute_flops_overhead", recompute_flops_per_token / flops_per_token},
      {"memory_budget_bytes", memory_budget},
      {"memory_budget_source", memory_budget_source},
      {"fits", fits},
      {"memory_per_rank_by_recompute_bytes", by_policy},
      {"smallest_world", smallest},
      {"rope", rope_layers},
      {"memory_breakdown_bytes", memory.ToJson()},
  };
}

std::string RunPlan::ToText() const {
  auto gib = [](uint64_t b) { return static_cast<double>(b) / (1ull << 30); };
  std::string s;
  s += fmt::format("parameters        {}\n", CountWithHuman(static_cast<uint64_t>(params)));
  s += fmt::format("FLOPs per token   {:.6g}\n", flops_per_token);
  s += fmt::format("RoPE              {}\n", rope);
  s += fmt::format("steps             {}\n", steps);
  s += fmt::format("tokens per step   {}\n", CountWithHuman(static_cast<uint64_t>(tokens_per_step)));
  s += fmt::format("tokens            {}\n", CountWithHuman(static_cast<uint64_t>(tokens)));
  s += fmt::format("ranks             {} ({} per rank per step)\n", world,
                   Plural(micro_batches_per_rank, "micro-batch", "micro-batches"));
  s += fmt::format("mode              {} sharding, {} accumulation, {} precision\n", sharding,
                   grad_accumulation, precision);
  s += fmt::format("recompute         {}{} (+{:.4g} FLOPs per token, {:.1f}% over the model's)\n",
                   RecomputeName(recompute),
                   recompute_requested == "auto" ? " (auto)" : "", recompute_flops_per_token,
                   100.0 * recompute_flops_per_token / flops_per_token);
  s += fmt::format("memory per rank   {:.2f} GiB: params {:.2f}, grads {:.2f}, adam {:.2f}, "
                   "accumulation {:.2f}, unit buffers {:.2f}, checkpoint snapshot {:.2f}, "
                   "checkpoint file map {:.2f}, activations {:.2f}, weight copies {:.2f}, "
                   "gemm scratch {:.2f}, batch {:.3f}, runtime {:.3f}\n",
                   gib(memory.total()), gib(memory.params), gib(memory.grads), gib(memory.adam),
                   gib(memory.accumulation), gib(memory.unit_buffers),
                   gib(memory.checkpoint_snapshot), gib(memory.checkpoint_file_map),
                   gib(memory.activations), gib(memory.weight_copies), gib(memory.gemm_scratch),
                   gib(memory.batch),
                   gib(memory.runtime));
  s += fmt::format("  by recompute    none {:.2f}, mlp {:.2f}, full {:.2f} GiB\n",
                   gib(total_by_recompute.at("none")), gib(total_by_recompute.at("mlp")),
                   gib(total_by_recompute.at("full")));
  s += fmt::format("budget per rank   {:.2f} GiB ({}): {}\n", gib(memory_budget),
                   memory_budget_source, fits ? "fits" : "DOES NOT FIT");
  const WorldFit& f = smallest_world;
  if (f.world > 0) {
    s += fmt::format("smallest world    {} ranks ({:.2f} GiB per rank, recompute {})\n", f.world,
                     gib(f.bytes), RecomputeName(f.recompute));
  } else {
    s += fmt::format("smallest world    none: does not fit at any world size up to {} (least "
                     "{:.2f} GiB per rank, at {} ranks)\n",
                     f.searched, gib(f.least_bytes), f.least_world);
  }
  if (const WorldFit& g = smallest_world_without_prefetch; g.world > 0) {
    s += fmt::format("  no prefetch     {} ranks ({:.2f} GiB per rank, recompute {}) with "
                     "parallel.prefetch: false\n",
                     g.world, gib(g.bytes), RecomputeName(g.recompute));
  }
  for (const auto& [step, lr] : lr_at) s += fmt::format("lr at step {:<8} {:.10g}\n", step, lr);
  return s;
}

}  // namespace replica
