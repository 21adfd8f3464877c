#include "run/plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/plural.h"

namespace replica {

int64_t AccumulationStackDepth(int64_t count) {
  // Replays TreeAccumulator's binary counter: leaves push, equal levels merge, the last folds.
  std::vector<int> stack;
  int64_t most = 0;
  for (int64_t q = 0; q + 1 < count; ++q) {
    int level = 0;
    while (!stack.empty() && stack.back() == level) {
      stack.pop_back();
      ++level;
    }
    stack.push_back(level);
    most = std::max<int64_t>(most, static_cast<int64_t>(stack.size()));
  }
  return most;
}

uint64_t ActivationFloats(const ModelConfig& m, int64_t micro_batch_instances, int64_t seq_len) {
  const uint64_t N = static_cast<uint64_t>(micro_batch_instances * seq_len);
  const uint64_t D = m.hidden_size, I = m.intermediate_size, H = m.num_heads,
                 Hd = m.num_heads * m.head_dim, KVd = m.num_kv_heads * m.head_dim,
                 V = m.vocab_size, L = m.num_layers, hd = m.head_dim;
  const uint64_t per_layer = N * (4 * D + 3 * Hd + 3 * KVd + 3 * I + H + 4);
  const uint64_t scratch = N * (4 * D + 3 * I + 4 * Hd + 4 * KVd);
  const uint64_t final_norm = N * (2 * D + 1);
  const uint64_t chunk_rows = std::min<uint64_t>(N, std::max<uint64_t>(1, (uint64_t{8} << 20) / V));
  const uint64_t lm_head = chunk_rows * V + 2 * static_cast<uint64_t>(seq_len) * hd;
  return L * per_layer + scratch + final_norm + lm_head;
}

RunPlan MakePlan(const RunConfig& c, int64_t world, const std::vector<int64_t>& lr_steps) {
  Require(world >= 1, "--world: expected at least 1 rank, got {}", world);
  const int64_t I = c.train.global_batch_instances, mu = c.train.micro_batch_instances;
  Require(I % world == 0, "--world {}: does not divide train.global_batch_instances ({})", world,
          I);
  Require((I / world) % mu == 0,
          "--world {}: the rank batch ({} instances) is not a whole number of micro-batches of "
          "train.micro_batch_instances ({})",
          world, I / world, mu);
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

  const uint64_t P = c.model.BuildLayout().total_floats();
  const uint64_t shard = (P + static_cast<uint64_t>(world) - 1) / static_cast<uint64_t>(world);
  MemoryPlan& mem = p.memory;
  mem.params = 4 * P;
  mem.grads = 4 * P;
  mem.adam = 8 * shard;
  mem.accumulation = 4 * P * static_cast<uint64_t>(AccumulationStackDepth(p.micro_batches_per_rank));
  mem.checkpoint_snapshot = 4 * P + 8 * shard;
  mem.activations = 4 * ActivationFloats(c.model, mu, c.data.seq_len);
  mem.batch = 8 * static_cast<uint64_t>(I / world * c.data.seq_len);

  for (int64_t s : lr_steps) {
    Require(s >= 0, "--lr-at: steps must be >= 0, got {}", s);
    p.lr_at[s] = LrAt(c.optim.schedule, c.optim.lr, s);
  }
  return p;
}

nlohmann::json RunPlan::ToJson() const {
  nlohmann::json lr = nlohmann::json::object();
  for (const auto& [s, v] : lr_at) lr[std::to_string(s)] = v;
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
      {"rope", rope_layers},
      {"memory_breakdown_bytes",
       {{"params", memory.params},
        {"grads", memory.grads},
        {"adam", memory.adam},
        {"accumulation", memory.accumulation},
        {"checkpoint_snapshot", memory.checkpoint_snapshot},
        {"activations", memory.activations},
        {"batch", memory.batch}}},
  };
}

std::string RunPlan::ToText() const {
  auto gib = [](uint64_t b) { return static_cast<double>(b) / (1ull << 30); };
  std::string s;
  s += fmt::format("parameters        {}\n", params);
  s += fmt::format("FLOPs per token   {:.6g}\n", flops_per_token);
  s += fmt::format("RoPE              {}\n", rope);
  s += fmt::format("steps             {}\n", steps);
  s += fmt::format("tokens per step   {}\n", tokens_per_step);
  s += fmt::format("tokens            {}\n", tokens);
  s += fmt::format("ranks             {} ({} per rank per step)\n", world,
                   Plural(micro_batches_per_rank, "micro-batch", "micro-batches"));
  s += fmt::format("memory per rank   {:.2f} GiB: params {:.2f}, grads {:.2f}, adam {:.2f}, "
                   "accumulation {:.2f}, checkpoint snapshot {:.2f}, activations {:.2f}, "
                   "batch {:.3f}\n",
                   gib(memory.total()), gib(memory.params), gib(memory.grads), gib(memory.adam),
                   gib(memory.accumulation), gib(memory.checkpoint_snapshot),
                   gib(memory.activations), gib(memory.batch));
  for (const auto& [step, lr] : lr_at) s += fmt::format("lr at step {:<8} {:.10g}\n", step, lr);
  return s;
}

}  // namespace replica
