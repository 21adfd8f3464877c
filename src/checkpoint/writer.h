// Writing checkpoints of format version 1 (format.h, docs/design.md §4 and §2.6: whole-model
// model.safetensors + optim.safetensors from one process) atomically and in the background while
// training continues. `replica convert` imports through WriteCheckpointDir; the trainer writes
// format version 2 with ShardedCheckpointWriter (sharded_writer.h), which reuses
// PublishCheckpointDir, PruneCheckpoints and RemoveInterruptedWrites from here.
//
// Usage by the trainer:
//   CheckpointWriter ckpt({.run_dir = dir, .keep = cfg.keep});
//   ... every N steps and at the end:
//   ckpt.Save(step, layout, params, adam_m, adam_v, adam_step, state_json, model.ToHfJson());
//   ... before exiting:
//   ckpt.Finish();   // waits; throws if the last write failed
//
// Promises:
//  - Save() copies params, m and v into the writer's own memory (the only synchronous work, done
//    by the backend's Copy; the memory is reused between saves) and returns; a background std::thread writes the files. The
//    caller may modify its buffers as soon as Save() returns. (background = false: no copy when
//    the backend's memory is the host's, the files are written from the caller's buffers before
//    Save() returns; a backend whose memory is not the host's is always copied out through
//    Backend::CopyToHost.)
//  - Files go into RUN/checkpoints/step-N.tmp/, each fsync'ed; MANIFEST.json is written, the
//    directory is renamed to step-N/ and DONE is written last. A crash at any point leaves the
//    previous checkpoints untouched and at most one incomplete directory that readers skip.
//  - A failed background write (e.g. "No space left on device") removes its partial directory and
//    is rethrown as replica::Error — naming the checkpoint directory, the file and the OS reason —
//    by the next Save(), Wait() or Finish(). The destructor waits and logs an uncollected failure.
//  - Only after a new checkpoint is complete, older ones are pruned: the newest `keep` complete
//    checkpoints survive (keep <= 0: keep all); incomplete step-* directories older than the new
//    one and any step-* directory NEWER than it (left by an abandoned trajectory before a resume)
//    are removed. Stale *.tmp directories are removed when the writer is constructed.
//  - Fault injection (fault.h): kCheckpointFiles after model.safetensors is written,
//    kCheckpointBeforeDone between the rename and DONE.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ops/backend.h"
#include "tensor/flat_buffer.h"

namespace replica {

// Everything one checkpoint directory holds. Pointers reference flat buffers laid out by `layout`
// and must stay valid during WriteCheckpointDir. adam_m/adam_v == nullptr: weights-only (no
// optim.safetensors). Null JSON values are not written.
struct CheckpointContents {
  int64_t step = 0;
  const ParamLayout* layout = nullptr;
  const float* params = nullptr;
  const float* adam_m = nullptr;
  const float* adam_v = nullptr;
  int64_t adam_step = 0;
  nlohmann::json state;         // -> state.json
  nlohmann::json model_config;  // -> config.json (HF config)
  std::vector<std::pair<std::string, std::string>> extra_files;  // name -> contents
};

// Synchronously writes `c` as checkpoint directory `final_dir` (via final_dir + ".tmp", see the
// promises above; an existing `final_dir` is replaced). Error on failure, with the partial
// directory removed.
void WriteCheckpointDir(const std::string& final_dir, const CheckpointContents& c);

// The end of every checkpoint write, in `tmp` (all data files written and fsync'ed): writes
// `manifest` as MANIFEST.json, fsyncs, renames tmp to final_dir (moving an existing final_dir
// aside), fsyncs the parent and writes DONE last (fault point kCheckpointBeforeDone between).
// *renamed turns true once final_dir holds the files. Error on failure (the caller cleans up).
void PublishCheckpointDir(const std::string& tmp, const std::string& final_dir, int64_t step,
                          const std::string& manifest, bool* renamed);
// remove_all that logs instead of throwing.
void RemoveAllQuietly(const std::string& path);
// Removes step-*.tmp and step-*.replaced directories (leftovers of interrupted writes).
void RemoveInterruptedWrites(const std::string& checkpoints_dir);

struct CheckpointWriterOptions {
  std::string run_dir;      // checkpoints go to run_dir/checkpoints/
  int keep = 0;             // how many complete checkpoints to keep; <= 0 keeps all
  bool background = true;   // false: Save() writes from the caller's buffers before returning
                            // (no snapshot: no extra memory, training waits for the write)
};

struct CheckpointWriteStats {
  int64_t step = -1;
  std::string dir;
  double snapshot_seconds = 0;  // the synchronous copy
  double write_seconds = 0;     // files + fsync + manifest + rename + DONE + prune
  uint64_t bytes = 0;           // total size of the files written
};

class CheckpointWriter {
 public:
  // `backend` makes the snapshot copies and must outlive the writer.
  explicit CheckpointWriter(CheckpointWriterOptions options,
                            const Backend& backend);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Waits for the previous write (rethrowing its failure), snapshots, starts writing step-N.
  // adam_m/adam_v must have params.size() floats; `state` becomes state.json, `model_config`
  // (ModelConfig::ToHfJson()) config.json.
  void Save(int64_t step, const ParamLayout& layout, const FlatBuffer& params,
            const FlatBuffer& adam_m, const FlatBuffer& adam_v, int64_t adam_step,
            nlohmann::json state, nlohmann::json model_config);
  // Optional: allocates the snapshot buffers now (e.g. at start-up) instead of in the first
  // background Save(); first-touching gigabytes of memory can take seconds.
  void Reserve(const ParamLayout& layout);
  void Wait();    // blocks until no write is in flight; rethrows its failure (once)
  void Finish() { Wait(); }
  bool InFlight() const { return thread_.joinable(); }
  // Whether Save copies the buffers into host memory first: background, or not host memory.
  bool Snapshots() const { return options_.background || !backend_.is_host(); }
  CheckpointWriteStats LastStats() const;  // of the last completed write
  std::string checkpoints_dir() const;

 private:
  void Run(CheckpointContents c, std::string final_dir);
  CheckpointWriterOptions options_;
  const Backend& backend_;
  ParamLayout layout_;
  FlatBuffer params_, m_, v_;
  std::thread thread_;
  std::exception_ptr error_;
  mutable std::mutex mu_;
  CheckpointWriteStats stats_;
  double pending_snapshot_seconds_ = 0;
};

// Removes old checkpoints per the rules above, given that `newest_step` was just completed.
// Never throws (failures are logged): the new checkpoint is already safe.
void PruneCheckpoints(const std::string& checkpoints_dir, int64_t newest_step, int keep);

}  // namespace replica
