// What a run config means before anything runs (`replica plan`, docs/design.md §5): parameter count,
// window-aware FLOPs per token (ModelConfig::FlopsPerToken, docs/design.md §6), steps and tokens, LR at
// chosen steps, and the memory one rank needs for the config's sharding mode and recompute policy,
// against a memory budget per rank: which recompute policy `auto` resolves to, whether it fits, and
// the smallest world size at which it does.
//
// Memory per rank (bytes; docs/memory.md explains every term), with P = the flat parameter
// buffer's floats (alignment padding included), S = the largest rank's shard of it (ShardPlan:
// kNormBlock-aligned), U = the largest unit's floats (embedding, one layer, or final norm + LM
// head), R ranks, M_r = micro-batches per rank per step, μ = instances per micro-batch, T = seq_len:
//                      zero1/tree            world 1/sequential    zero3 (sequential)
//   params             4P                    4P                    4S   owned fp32 master shard
//   grads              4P                    4P (per micro-batch)  4S   owned accumulator shard
//   adam               8S (R=1: 8P)          8P                    8S
//   accumulation       4P·⌊log2 M_r⌋         4P (running sum)      0    (tree: TreeAccumulator's
//                                                  spare buffers, PairwiseTreeSpareBuffers(M_r))
//   unit_buffers       0                     0                     4U·((w+f)·[R>1] + w)
//                                                  + 4·min(U,S)·[R>1] + 2·min(U,S)·(1+f)·[bf16]·[R>1]
//                                        (w = 2 with a tied LM head, else 1: gathered weights —
//                                         none at R = 1 —, f = 1 the prefetch in flight
//                                         (parallel.prefetch), unit gradients, the fold's receive
//                                         buffer of a rank's part of a unit; in bf16 the 1 + f staging buffers of the owned
//                                         part of a unit's bf16 wire image, 2·min(U, S) bytes each)
//   checkpoint_snapshot  12S: every rank writes the range it owns (the sharded checkpoint,
//                        any sharding; S = P at R = 1), snapshotted first (ShardStateBytes)
//   checkpoint_file_map  12S: the rank's shard file, mapped while the manifest hashes it
//   activations        4·Olmo3Model::ActivationArenaFloats(μ, T, policy) + the LM head's workspace
//                      (LmHeadWorkspace::Bytes, as the precision's backend grows it) + the RoPE
//                      tables (RopeTableBytes: one per distinct setting)
//   weight_copies      the bf16 copies of the matmul weights the bf16 GEMM keeps per optimizer step
//                      (compute.precision bf16 on the oneDNN route only; 0 elsewhere)
//   gemm_scratch       what the bf16 backends' ops keep on the calling thread: the bf16 GEMM's
//                      operand buffers (bf16), the bf16-fsdp ops' buffers (bf16-fsdp)
// The last three are the backend's own figures (Backend::StepScratchBytes, through
// model/model_sizes.h TrainingStepScratch), computed from the size functions its allocators use,
// for the bf16 GEMM route of the machine that plans.
//   batch              8·(μ·M_r)·T: the rank's token ids and labels
//   runtime            the process without the model: code, libraries, OpenMP/BLAS/MPI state
//                      (RuntimeBytes, measured: docs/memory.md)
// The sum is a planning estimate; docs/memory.md compares it with measured peak RSS.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/recompute.h"
#include "model/model_sizes.h"  // StepScratch
#include "run/run_config.h"

namespace replica {

struct MemoryPlan {
  uint64_t params = 0, grads = 0, adam = 0, accumulation = 0, unit_buffers = 0,
           checkpoint_snapshot = 0, checkpoint_file_map = 0, activations = 0, weight_copies = 0,
           gemm_scratch = 0, batch = 0, runtime = 0;
  uint64_t total() const {
    return params + grads + adam + accumulation + unit_buffers + checkpoint_snapshot +
           checkpoint_file_map + activations + weight_copies + gemm_scratch + batch + runtime;
  }
  nlohmann::json ToJson() const;
};

// The smallest world size at which the config fits its budget per rank.
struct WorldFit {
  int64_t world = 0;         // 0: no world size up to `searched` fits
  Recompute recompute = Recompute::kFull;
  uint64_t bytes = 0;        // the plan's total per rank there
  int64_t searched = 0;      // the largest world size tried (the global batch in instances)
  uint64_t least_bytes = 0;  // when none fits: the least memory per rank at any world size
  int64_t least_world = 0;   //   and where
  // {"world" (null when none fits), "searched_up_to", then "recompute" and
  // "memory_per_rank_bytes", or "least_memory_per_rank_bytes" and "least_memory_world"}
  nlohmann::json ToJson() const;
};

struct RunPlan {
  int64_t params = 0;             // ModelConfig::NumParams()
  double flops_per_token = 0;     // ModelConfig::FlopsPerToken(seq_len)
  int64_t steps = 0;              // train.max_steps
  int64_t tokens_per_step = 0;    // global_batch_instances · seq_len
  int64_t tokens = 0;             // steps · tokens_per_step
  int64_t world = 1;
  int64_t micro_batches_per_rank = 0;
  std::string sharding, grad_accumulation, precision;
  std::string recompute_requested;  // none | mlp | full | auto
  Recompute recompute = Recompute::kNone;  // the policy planned (auto resolved)
  uint64_t memory_budget = 0;       // bytes per rank
  std::string memory_budget_source; // "--memory", "parallel.memory_per_rank", "physical memory / R"
  bool fits = false;
  MemoryPlan memory;                // under `recompute`
  std::map<std::string, uint64_t> total_by_recompute;  // "none" / "mlp" / "full" -> bytes
  double recompute_flops_per_token = 0;  // extra FLOPs per token of `recompute`
  WorldFit smallest_world;
  // zero3 with parallel.prefetch on: the smallest world with it off, when that is smaller (the
  // prefetch's unit buffer decided the fit); world 0 otherwise.
  WorldFit smallest_world_without_prefetch;
  std::map<int64_t, double> lr_at;
  std::string rope;               // ModelConfig::RopeSummary()
  nlohmann::json rope_layers;     // {"full_attention": RopeParamsJson, "sliding_attention": ...}

  nlohmann::json ToJson() const;
  std::string ToText() const;
};

// What a process costs without the model (code, libraries, OpenMP and OpenBLAS state; under
// mpirun OpenMPI's too), measured on this machine (docs/memory.md).
constexpr uint64_t kRuntimeMiB = 19, kRuntimeMpiMiB = 44;
uint64_t RuntimeBytes(int64_t world);

// Extra FLOPs per token the policy's recompute costs (docs/memory.md):
//   mlp:  (L−1) · 6·D·I                          gate, up and down GEMMs again
//   full: Σ_{l<L−1} [2·(D·(2·Hd + 2·KVd) + 3·D·I) + 4·Hd·vis_l/T]   each layer's forward again
// (vis_l = Σ_t min(t+1, W_l): the attention's visible keys; the last layer is not recomputed: the
// forward leaves its values in the working set).
double RecomputeFlopsPerToken(const ModelConfig& m, int64_t seq_len, Recompute policy);

// What the memory plan needs of the model and the micro-batch that no world size changes: building
// the parameter layout and counting the activation arena each walk every layer, so MakePlan does
// it once, not once per world size and policy it tries (a plan stays linear in the layer count).
struct ModelFootprint {
  uint64_t params_floats = 0;        // P: the flat layout's floats, alignment padding included
  uint64_t largest_unit_floats = 0;  // U: embedding, one layer, or final norm + LM head
  uint64_t arena_floats[3] = {};     // Olmo3Model::ActivationArenaFloats(μ, T, policy) by policy
  StepScratch step_scratch;          // TrainingStepScratch(model, μ·T, device, precision)
  uint64_t rope_table_bytes = 0;     // RopeTableBytes(model, T)
  static ModelFootprint Of(const RunConfig& c);
};

// "" when `world` ranks can run the config's mode (parallel.sharding, train.grad_accumulation,
// batch split); else why not.
std::string WorldProblem(const RunConfig& c, int64_t world);
// The memory per rank of the config at `world` ranks under `policy`. The world must be runnable.
MemoryPlan PlanMemory(const RunConfig& c, int64_t world, Recompute policy);
MemoryPlan PlanMemory(const RunConfig& c, const ModelFootprint& f, int64_t world, Recompute policy);
// The budget per rank: `memory` (from --memory) if given, else parallel.memory_per_rank if not 0,
// else this machine's physical memory divided by `ranks_on_host`.
uint64_t MemoryBudget(const RunConfig& c, std::optional<uint64_t> memory, int64_t ranks_on_host,
                      std::string* source = nullptr);
// train.recompute with auto resolved: the first of none, mlp, full (cheapest in FLOPs first)
// whose plan fits `budget`; full when none fits (then *fits is false).
Recompute ResolveRecompute(const RunConfig& c, int64_t world, uint64_t budget,
                           bool* fits = nullptr);
Recompute ResolveRecompute(const RunConfig& c, const ModelFootprint& f, int64_t world,
                           uint64_t budget, bool* fits = nullptr);

struct PlanOptions {
  int64_t world = 1;
  std::optional<uint64_t> memory;  // --memory; else parallel.memory_per_rank / physical memory
  std::vector<int64_t> lr_steps;
};
// Error when the world cannot run the config (WorldProblem) or a step in lr_steps is negative.
RunPlan MakePlan(const RunConfig& config, const PlanOptions& options);

}  // namespace replica
