// RunConfig: what a training run is, read from YAML (yaml-cpp) with `--set key=value` overrides
// (docs/config.md lists every key). Promises:
//   - every key is known: an unknown key is refused by its full dotted path, a value of the wrong
//     type is refused naming the key and the expected type, an inconsistent value (global batch not
//     a multiple of the micro-batch, warmup past t_max, ...) is refused naming the key;
//   - relative paths in a config file are resolved against that file's directory, relative paths
//     given with --set against the current directory; the resolved config holds absolute paths;
//   - Canonical() is a complete, self-contained YAML rendering (every key, defaults filled in, the
//     model shape inline) that loads back to the same config; Hash() is its sha256;
//   - TrajectoryHash() covers only the keys that change the training math (model, init, data
//     order, batch, loss, optimizer, schedule): a run may resume with a different max_steps, thread
//     count, checkpoint or eval setting, but not with a different trajectory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "optim/adamw.h"
#include "optim/update_rule.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"

namespace replica {

struct RunConfig {
  ModelConfig model;

  struct Init {
    uint64_t seed = 0;              // parameter init RNG seed (OLMo-core init_seed default 0)
                                    // (std = model.initializer_range, OLMo-core's 0.02)
    std::string from_checkpoint;    // start from these weights (checkpoint dir or HF dir)
    bool reset_step = true;         // stage 1 -> 2: fresh step/tokens/data/schedule
    bool load_optimizer = true;     // take Adam m, v and t from the checkpoint
  } init;

  // One source of a data mixture (data/mixture.h has the selection rule).
  struct MixtureSource {
    std::string name;
    std::vector<std::string> paths;  // token files or globs
    double weight = 0;               // share of data.mixture_tokens
    int64_t tokens = 0;              // own budget when data.mixture_tokens is 0
    double max_repetition = 1.0;     // >= 1: may be up-sampled this many times
  };

  struct Data {
    std::vector<std::string> paths;  // token files or globs (sorted expansion), in mix order
    std::vector<MixtureSource> mixture;  // instead of paths: a weighted mixture
    int64_t mixture_tokens = 0;
    int64_t mixture_seed = 0;
    int64_t seq_len = 0;
    int64_t seed = 0;
    // "" = the files in the order data.paths gives them; else a Python integer, and the expanded
    // files are read in the order random.Random(seed).shuffle puts them (OLMo-core's
    // source_permutation_seed; data/python_random.h).
    std::string source_permutation_seed;
    std::string dtype = "uint32";   // uint32 | uint16
    bool check_vocab = true;        // refuse token ids >= model.vocab_size
    // "none": OLMo-core's NumpyFSLDataset (instances cut from the files); "obfd": its
    // NumpyPackedFSLDataset (documents packed into instances, data/packed_dataset.h).
    std::string packing = "none";
    std::string long_doc_strategy = "truncate";  // with obfd: truncate | fragment
    int64_t source_group_size = 1;               // with obfd: files packed together
    bool generate_doc_lengths = false;           // document lengths (cu_doc_lens), any dataset
  } data;

  struct Train {
    int64_t max_steps = 0;
    int64_t global_batch_instances = 0;
    int64_t micro_batch_instances = 0;  // 0 = the global batch (one micro-batch)
    int64_t threads = 0;                // 0 = all cores
    double z_loss_multiplier = 1e-5;
    SkipStepConfig skip_step;
    int64_t log_interval = 1;           // progress line every N steps (metrics: every step)
    // How micro-batch gradients are summed (train/grad_accumulation.h): "tree" (the evens-first
    // pairwise tree) or "sequential" (left fold in micro-batch order). Trajectory key.
    std::string grad_accumulation = "tree";
    // Which instances of a rank's batch form micro-batch k of m (train/train_step.h): "strided"
    // (k, k + m, k + 2m, ...: the same micro-batches on any number of ranks) or "contiguous"
    // (kμ .. kμ + μ − 1 of the rank's batch: OLMo-core's split, whose micro-batches depend on the
    // ranks). Trajectory key.
    std::string micro_batch_layout = "strided";
    // Activation recomputation (model/recompute.h): none | mlp | full, or auto = the cheapest
    // that fits parallel.memory_per_rank (run/plan.h). Changes no bit: not a trajectory key.
    std::string recompute = "auto";
  } train;

  // The update rule (type, and AdamW's keys: betas, eps, weight_decay, max_grad_norm, no_decay;
  // optim/update_rule.h, optim/adamw_config.h), the peak LR and its schedule. An Optim is the
  // UpdateRuleConfig the optimizer's rule is built from.
  struct Optim : UpdateRuleConfig {
    double lr = 0;
    std::string schedule_type = "cosine";
    ScheduleConfig schedule;  // type resolved from schedule_type
  } optim;

  struct Checkpoint {
    int64_t interval = 1000;  // steps between checkpoints; 0 = only at the end
    int64_t keep = 2;      // newest complete checkpoints kept
  } checkpoint;

  struct Eval {
    int64_t interval = 0;             // steps between evaluations; 0 = only at the end
    std::vector<std::string> sets;    // JSONL perplexity sets
    std::string tokenizer = "dolma2";  // dolma2 | bytes (tiny test vocabularies)
    // Leak guard (src/eval/leak_guard.h): scan every emitted batch against eval.sets + eval.canaries.
    std::string leak_guard = "stop";  // stop | warn | off
    std::string canaries;             // registered canary set (JSONL of token ids); "" = none
  } eval;

  // How the model computes (docs/precision.md). Not trajectory keys: a run may resume in another
  // precision or on another ISA (the device switch); metrics and checkpoints record both.
  struct Compute {
    // Which registered backend computes (ops/registry.h): cpu. Checked when the backend is
    // selected (an unknown device is refused naming the key and the registered devices).
    std::string device = "cpu";
    // fp32 | bf16 (bf16 matmul inputs, fp32 accumulation) | bf16-fsdp (every tensor rounded to
    // bf16 where torch rounds it under OLMo-core's FSDP mixed precision): docs/precision.md.
    std::string precision = "fp32";
    std::string isa = "auto";        // auto | avx2 | avx512 | amx: a cap on the CPU's ISA, checked
                                     // by the backend's device when the run starts (ops/device.h)
    // bf16-fsdp: the CPU kind whose torch kernels it follows, auto (this machine's) | avx2 |
    // avx512: the kind the reference run was made on (docs/precision.md).
    std::string torch_cpu = "auto";
  } compute;

  // How a multi-rank job shares the model (docs/distributed.md). Not a trajectory key.
  struct Parallel {
    std::string sharding = "zero1";  // zero1: Adam sharded | zero3: parameters, grads, Adam sharded
    // Memory one rank may use (core/byte_size.h: bytes or "24GiB"); "0" = this machine's physical
    // memory divided by the ranks on it. What train.recompute: auto plans against.
    std::string memory_per_rank = "0";
    // zero3: start the gather of the next unit while this one computes (docs/distributed.md).
    bool prefetch = true;
    // The reference run's context-parallel degree (OLMo-core cp_config.degree): each sequence
    // split over this many ranks. replica computes every sequence whole on one rank, the same
    // math; `replica plan` shows what the degree implies per rank (run/context_parallel.h).
    int64_t context_parallel_degree = 1;
  } parallel;

  struct Fault {
    int64_t kill_at_step = 0;        // abort (SIGKILL itself) right after this step's metrics
    int64_t kill_in_checkpoint = 0;  // abort in the middle of writing this step's checkpoint
    std::string kill_in_checkpoint_phase = "files";  // files | before_done (see core/fault.h)
  } fault;

  std::string source;  // the file it was read from ("" for a string)

  // Reads `path` and applies `overrides` ("a.b=value", value parsed as YAML), in order.
  static RunConfig Load(const std::string& path, const std::vector<std::string>& overrides = {});
  // The same from YAML text; relative paths resolve against `base_dir`.
  static RunConfig FromYaml(const std::string& text, const std::string& base_dir,
                            const std::vector<std::string>& overrides = {},
                            const std::string& source = "<string>");

  std::string Canonical() const;
  std::string Hash() const;            // sha256 hex of Canonical()
  std::string TrajectoryHash() const;  // sha256 hex of the trajectory keys' canonical values

  int64_t NumMicroBatches() const {
    return train.global_batch_instances / train.micro_batch_instances;
  }
  int64_t TokensPerStep() const { return train.global_batch_instances * data.seq_len; }
};

// Trajectory keys whose canonical values differ between a and b (dotted paths; "model.*" keys too).
std::vector<std::string> TrajectoryDifferences(const RunConfig& a, const RunConfig& b);
// The same keys with both values, for a refused resume: "optim.schedule.t_max (the run has 100,
// this config 200; pin it with --set optim.schedule.t_max=100)"; "" when none differs.
std::string DescribeTrajectoryDifferences(const RunConfig& before, const RunConfig& now);

// Every settable key with its type and a one-line description, for --help and docs.
struct ConfigKeyInfo {
  std::string key, type, help;
  bool trajectory;
};
std::vector<ConfigKeyInfo> ConfigKeys();

}  // namespace replica
