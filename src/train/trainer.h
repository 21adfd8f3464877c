// The training loop (`replica train`, docs/design.md §3-§5): Olmo3Model + DataLoader + TrainStep
// (gradient reducer + optimizer + skip-step rule) + checkpoints + metrics, one run directory:
//   RUN/config.yaml     the resolved config (RunConfig::Canonical), RUN/config.sha256 its hash
//   RUN/metrics.jsonl   one train line per step, eval lines (metrics_writer.h)
//   RUN/checkpoints/    step-N/ (checkpoint/sharded_writer.h: every rank writes the range of
//                       parameters and Adam state it owns), the last `checkpoint.keep` kept
//   RUN/train.log       what was printed on stderr (progress, resume, summary)
//
// One step s (1-based): read the global batch (this rank's share), count the non-ignored labels N
// of the whole global batch BEFORE any backward, run forward+backward on each micro-batch with
// grad_scale = 1/N, summing micro-batch gradients along the fixed tree of grad_accum.h; then
// grad norm (fixed-order), clip coefficient, skip rule on (CE loss, grad norm), AdamW at LrAt(s),
// a metrics line, eval and checkpoint when due. Nothing depends on thread count or timing, so a run
// is bit-identical to itself, and a resumed run to one that never stopped.
//
// Start-up: if RUN holds a valid checkpoint, the newest one is loaded (weights, Adam m/v/t, step,
// tokens, loader position, skip history; each rank reads the range it owns, whatever world size
// wrote the checkpoint) and the run continues from it, saying which; its
// trajectory hash must match the config's (Error naming the keys that differ). Otherwise the model
// starts from init.from_checkpoint (checkpoint, run dir or HF model dir; with init.reset_step the
// step, tokens, data order and schedule start fresh) or from a fresh seeded init.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/shard_group.h"
#include "model/olmo3.h"
#include "run/run_config.h"
#include "train/grad_reducer.h"
#include "train/train_data.h"

namespace replica {

struct TrainerOptions {
  RunConfig config;
  std::string run_dir;
  int64_t rank = 0, world = 1;
  // How ranks combine gradients, and the optimizer that goes with it (grad_reducer.h): required
  // when world > 1 (parallel::DataParallel); null for one process (LocalGradReducer).
  GradReducer* reducer = nullptr;
  // The ranks that write each sharded checkpoint together (checkpoint/shard_group.h): required
  // when world > 1 (parallel::CommunicatorCheckpointGroup); null for one process.
  CheckpointGroup* checkpoint_group = nullptr;
  bool progress = true;            // live progress line on stderr
  // Called every eval.interval steps and after the last step; returns the "eval" object of the
  // metrics line (empty object = nothing to record). The trainer library cannot see src/eval; the
  // CLI wires EvalSuite in here.
  std::function<nlohmann::json(int64_t step, Olmo3Model& model)> eval;
  // Sees every batch the loader emits, before it is trained on: step, this rank's instance ids,
  // tokens [rows, seq_len] (the buffer the step reads) and the batch's cu_doc_lens as the step
  // receives them (data/loader.h RankBatch; empty without document lengths). The CLI wires the
  // leak guard (src/eval/leak_guard.h) and --dump-batches (batch_dump.h) here. Throwing an Error
  // stops the run.
  std::function<void(int64_t step, const std::vector<uint32_t>& instances, const int32_t* tokens,
                     int64_t rows, int64_t seq_len, const std::vector<int32_t>& cu_doc_lens)>
      on_batch;
  double peak_flops = 0;  // MFU denominator; 0 = measure the GEMM rate at start-up
  // Settings of the source config that this run does not reproduce and what it computes in their
  // place (`train --allow-unsupported`); each is written to train.log at the start of every run.
  std::vector<std::string> unreproduced;
};

struct TrainSummary {
  std::string run_dir;
  int64_t start_step = 0, end_step = 0;  // steps run: (start_step, end_step]
  std::string resumed_from;              // checkpoint dir, "" for a fresh start
  int64_t skipped_steps = 0;
  // Updates not applied for a non-finite loss or gradient norm, over the whole run: a resumed run
  // continues its checkpoint's count.
  int64_t non_finite_steps = 0;
  double first_loss = 0, last_loss = 0;  // of this process's first and last step
  double wall_s = 0, mean_tokens_per_s = 0, mean_mfu = 0, peak_flops = 0;
  // MFU against the nominal peak (FLOP/cycle/core x core clock x threads, the backend's device:
  // ops/device.h), and the clock it used with its source.
  double mean_mfu_nominal = 0, nominal_peak_flops = 0;
  std::string core_clock;
  std::string last_checkpoint;
  // The signal that stopped the run before train.max_steps (core/interrupt.h), 0 when none: the
  // run wrote a checkpoint of its last step and `replica train` exits with 128 + this number.
  int interrupted_signal = 0;
  // Seconds by kind of work (core/profile.h) summed over this process's steps but its first (one-time
  // allocations), plus "steps" and "step_seconds"; evaluations and checkpoint saves between steps
  // are not in it.
  nlohmann::json step_profile = nlohmann::json::object();
  nlohmann::json ToJson() const;
};

TrainSummary Train(const TrainerOptions& options);

}  // namespace replica
