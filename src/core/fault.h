// Fault injection for crash-recovery tests: abort the process
// WITHOUT any cleanup (raise(SIGKILL): no destructors, no atexit, no buffered-stream flush) at a
// chosen training step or in the middle of writing a checkpoint, so tests can prove that resume
// after a real crash is bit-exact and that half-written checkpoints are skipped.
//
// Configure once before training starts (from the config's `fault.*` keys and/or the
// REPLICA_FAULT environment variable); MaybeKill() is then safe to call from any thread.
//
// REPLICA_FAULT syntax: comma-separated items
//   step:N                    kill right after training step N completes (see kStep)
//   checkpoint:N              kill while writing the step-N checkpoint, after model.safetensors
//                             is written into step-N.tmp/ but before the rest (kCheckpointFiles)
//   checkpoint:N:before-done  kill after step-N.tmp/ was renamed to step-N/ but before DONE
//                             is written (kCheckpointBeforeDone; "before_done" also accepted)
// e.g. REPLICA_FAULT=step:17  or  REPLICA_FAULT=checkpoint:20:before-done
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace replica::fault {

enum class FaultPoint {
  kStep,                  // trainer: after step N's metrics line is written, before its checkpoint
  kCheckpointFiles,       // checkpoint writer: some files written into the .tmp directory
  kCheckpointBeforeDone,  // checkpoint writer: directory renamed into place, DONE not yet written
};

enum class CheckpointPhase { kFiles, kBeforeDone };

struct FaultSpec {
  std::optional<int64_t> kill_at_step;        // config key fault.kill_at_step
  std::optional<int64_t> kill_in_checkpoint;  // config key fault.kill_in_checkpoint
  CheckpointPhase checkpoint_phase = CheckpointPhase::kFiles;  // fault.kill_in_checkpoint_phase
};

// Parses the REPLICA_FAULT syntax above; Error naming `source` and the bad item otherwise.
FaultSpec ParseFaultSpec(const std::string& text, const std::string& source = "REPLICA_FAULT");

// Installs `spec` (replacing any previous one). Fields set in the REPLICA_FAULT environment
// variable, if present, override the corresponding fields of `spec`.
void Configure(const FaultSpec& spec);
// Configure({}) plus the environment: what a process without fault config calls.
inline void ConfigureFromEnv() { Configure(FaultSpec{}); }
FaultSpec Current();

// Kills the process with SIGKILL, after one line on stderr, when (point, step) matches the
// installed spec. Does nothing otherwise (the common case costs two comparisons).
void MaybeKill(FaultPoint point, int64_t step);

}  // namespace replica::fault
