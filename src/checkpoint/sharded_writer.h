// Writing sharded checkpoints (format version 2: checkpoint/sharded_format.h, docs/design.md §4):
// every rank writes the range of the flat layout it owns — parameters, Adam m and v — as its own
// file; rank 0 ties the files together with MANIFEST.json and DONE. No rank ever holds more than
// its own range twice: the background snapshot is this rank's [begin, end) of params, m and v.
//
// Usage by the trainer (every rank, at the same steps):
//   ShardedCheckpointWriter ckpt({.run_dir = dir, .keep = k}, group);
//   ckpt.Reserve(end - begin);               // optional: first-touch the snapshot at start-up
//   ... when a checkpoint is due:
//   ckpt.Save(step, layout, {begin, end, params + begin, m, v}, adam_step, state, hf_config);
//   ... after every other step:
//   ckpt.Poll();                              // completes a finished write (cheap collective)
//   ... before exiting:
//   ckpt.Finish();
//
// Promises:
//  - Save() waits for (and completes) the previous write, refuses NaN/Inf in the range (naming the
//    tensor), copies the range into the writer's own memory (background) and returns; a
//    background thread writes shard-RRRRR-of-WWWWW.safetensors into step-N.tmp/ and fsyncs it
//    (rank 0 also writes state.json and config.json). Fault point kCheckpointFiles fires on a
//    rank right after its shard file is written.
//  - The commit is collective and runs on the calling thread: the next Poll() after every rank's
//    files are written (Poll() costs one tiny all-ranks exchange while a write is in flight,
//    nothing otherwise), or the next Save() or Finish(). Rank 0 gathers every file's size and
//    XXH3-64 digest, writes MANIFEST.json, renames step-N.tmp/ to step-N/ and writes DONE last
//    (fault point kCheckpointBeforeDone before it), then prunes as CheckpointWriter does
//    (PruneCheckpoints). A rank killed at any point leaves every earlier checkpoint complete and
//    at most an incomplete step-N.tmp/ or DONE-less step-N/ that readers skip.
//  - A failed write on any rank (e.g. "No space left on device") is an Error on that rank at the
//    commit, naming the step, the directory, the file and the OS reason; rank 0 removes the
//    partial directory and fails too. (A failing rank ends the whole job: communicator.h.)
//  - background = false: no snapshot when the backend's memory is the host's (is_host()); the
//    files are written from the caller's memory and committed inside Save(). A backend whose
//    memory is not the host's is always snapshotted (through Backend::CopyToHost).
#pragma once
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

#include "checkpoint/shard_group.h"
#include "checkpoint/writer.h"
#include "ops/backend.h"
#include "tensor/flat_buffer.h"

namespace replica {

// This rank's part of the state: floats [begin, end) of the flat layout; each pointer holds
// end - begin floats, element `begin` first.
struct OwnedShard {
  size_t begin = 0, end = 0;
  const float* params = nullptr;
  const float* m = nullptr;
  const float* v = nullptr;
};

class ShardedCheckpointWriter {
 public:
  // Collective: rank 0 removes leftovers of interrupted writes (step-*.tmp, step-*.replaced)
  // before any rank can write. `group` and `backend` (snapshot copies) must outlive the writer.
  ShardedCheckpointWriter(CheckpointWriterOptions options, CheckpointGroup& group,
                          const Backend& backend);
  // Joins the thread; a write never committed is only logged (no collective here).
  ~ShardedCheckpointWriter();
  ShardedCheckpointWriter(const ShardedCheckpointWriter&) = delete;
  ShardedCheckpointWriter& operator=(const ShardedCheckpointWriter&) = delete;

  // Allocates the snapshot (params, m and v of the range: ShardStateBytes(owned_floats)) now
  // instead of at the first background Save().
  void Reserve(size_t owned_floats);
  // Collective (see the promises). `state` and `model_config` are used on rank 0 only.
  void Save(int64_t step, const ParamLayout& layout, const OwnedShard& shard, int64_t adam_step,
            nlohmann::json state, nlohmann::json model_config);
  void Poll();    // collective
  void Finish();  // collective: waits for and completes the write in flight
  bool InFlight() const { return pending_; }
  CheckpointWriteStats LastStats() const { return stats_; }  // rank 0: the checkpoint; others: own
  std::string checkpoints_dir() const;
  std::string DirOf(int64_t step) const;

 private:
  struct Job {
    int64_t step = 0;
    const ParamLayout* layout = nullptr;
    OwnedShard shard;
    int64_t adam_step = 0;
    nlohmann::json state, model_config;
    std::string tmp, final_dir;
  };
  // Whether Save copies the range into host memory first: background, or not host memory.
  bool Snapshots() const { return options_.background || !backend_.is_host(); }
  void WriteOwnFiles();  // the background part; sets receipt_ and done_
  void Commit();         // collective

  CheckpointWriterOptions options_;
  CheckpointGroup& group_;
  const Backend& backend_;
  FlatBuffer params_, m_, v_;  // the snapshot: this rank's range only
  ParamLayout layout_;         // copy for the background thread
  Job job_;
  bool pending_ = false;
  std::thread thread_;
  std::atomic<bool> done_{false};
  std::string receipt_;        // JSON: this rank's files (name -> bytes, digest) or its error
  double snapshot_seconds_ = 0, write_seconds_ = 0;
  CheckpointWriteStats stats_;
};

}  // namespace replica
