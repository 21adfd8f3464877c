// Finding, verifying and loading checkpoints (format: checkpoint/format.h).
//
// Usage by the trainer on start-up:
//   if (auto found = FindLatestValid(run_dir)) {
//     REPLICA_LOG_INFO("resuming from {}", found->dir);
//     Checkpoint ckpt = Checkpoint::Open(found->dir, /*verify=*/false);  // just verified
//     ckpt.LoadParams(layout, params);
//     int64_t adam_step = ckpt.LoadOptimizer(layout, adam_m, adam_v);
//     const nlohmann::json& state = ckpt.state();
//   }
//
// Both formats load (checkpoint/format.h version 1: model.safetensors + optim.safetensors;
// checkpoint/sharded_format.h version 2: one shard file per rank of the writing job). ReadRange
// assembles any float range of params / Adam m / Adam v whatever world size wrote the checkpoint,
// opening only the shard files that overlap it; LoadParams / LoadOptimizer read everything.
//
// Promises: FindLatestValid() tries step-* directories newest first, fully verifies each (DONE,
// manifest, every file's size and XXH3 checksum), logs a warning naming every incomplete or
// corrupt one it skips and why, and returns the newest good one. Loads restore tensors by HF name
// and refuse (Error naming the file and tensor) a missing tensor, an unexpected extra tensor, a
// shape or dtype mismatch: a checkpoint of another model never loads silently.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "checkpoint/sharded_format.h"
#include "tensor/flat_buffer.h"

namespace replica {

struct CheckpointInfo {
  std::string dir;
  int64_t step = 0;
};

// Newest valid checkpoint under run_dir/checkpoints/, or nullopt when there is none (a fresh run).
// A candidate that disappears while it is verified (pruned by a writer that just completed a newer
// one) is no damage: the directory is listed again. `warn` = false (the ranks other than 0 of a
// job) leaves the skip warnings to one process.
std::optional<CheckpointInfo> FindLatestValid(const std::string& run_dir, bool warn = true);

// `path` is a checkpoint directory (holds MANIFEST.json or DONE: verified) or a run directory
// (holds checkpoints/: its newest valid checkpoint). Error otherwise or when nothing valid exists.
CheckpointInfo ResolveCheckpoint(const std::string& path);

// Runs `read` on the checkpoint `path` names (ResolveCheckpoint). A run directory's newest
// checkpoint can be pruned by a writer (checkpoint.keep) while `read` is still reading it: when
// `read` throws an Error and its checkpoint has since been removed, lost its DONE marker or been
// superseded by a newer complete one, the newest complete checkpoint is searched again and `read`
// called on it, at most kCheckpointReadAttempts times in all. An Error about a checkpoint that is
// still the newest, or about a checkpoint directory named directly, is thrown unchanged. `read`
// must leave nothing behind that a second call would not replace.
constexpr int kCheckpointReadAttempts = 8;
void ReadNewestCheckpoint(const std::string& path,
                          const std::function<void(const CheckpointInfo&)>& read);

class Checkpoint;
// `ckpt.LoadParams(layout, params)` for a checkpoint found through `path` (ReadNewestCheckpoint's
// retry, for a caller that opened it earlier): a replacement must carry the same model config.
void LoadNewestParams(const std::string& path, Checkpoint& ckpt, const ParamLayout& layout,
                      FlatBuffer& params);

class Checkpoint {
 public:
  // verify = true runs VerifyCheckpoint first (Error when incomplete or corrupt).
  static Checkpoint Open(const std::string& dir, bool verify = true);

  const std::string& dir() const { return dir_; }
  int64_t step() const { return step_; }
  bool has_optimizer() const;
  bool has_state() const { return !state_.is_null(); }
  const nlohmann::json& state() const { return state_; }                // null when absent
  const nlohmann::json& model_config() const { return model_config_; }  // null when absent

  int version() const { return version_; }  // 1 or kShardedFormatVersion
  // Version 2: the shards' manifest (the world size that wrote it, ranges, files).
  const std::optional<ShardedManifest>& sharded() const { return sharded_; }

  // Called after each shard (version 2) or tensor (version 1) with the floats read so far.
  using ReadProgressFn = std::function<void(size_t floats_read)>;
  // Fills params (size >= layout.total_floats()) from model.safetensors or every shard.
  void LoadParams(const ParamLayout& layout, FlatBuffer& params,
                  const ReadProgressFn& progress = {}) const;
  // Fills m and v from optim.safetensors or every shard; returns the optimizer's step count.
  int64_t LoadOptimizer(const ParamLayout& layout, FlatBuffer& adam_m, FlatBuffer& adam_v) const;
  // Floats [begin, end) of `field` into dst[0, end - begin), alignment padding as zeros. Error
  // naming the file when the checkpoint is of another layout, a shard's file disagrees with the
  // manifest (range, tensor size, dtype) or holds NaN/Inf in the range.
  void ReadRange(ShardField field, const ParamLayout& layout, size_t begin, size_t end,
                 float* dst, const ReadProgressFn& progress = {}) const;
  // The optimizer's step count t (Error when the checkpoint has no optimizer state).
  int64_t adam_step() const;

 private:
  void ReadRangeV1(ShardField field, const ParamLayout& layout, size_t begin, size_t end,
                   float* dst, const ReadProgressFn& progress) const;
  std::string dir_;
  int64_t step_ = 0;
  int version_ = 1;
  std::optional<ShardedManifest> sharded_;
  nlohmann::json state_, model_config_;
};

// Reads tensors "<prefix><view.name>" of an F32 safetensors file into `dst` laid out by `layout`,
// requiring exactly the layout's tensors, F32, with equal shapes (Error naming file and tensor).
void LoadF32ByName(const std::string& path, const ParamLayout& layout, const std::string& prefix,
                   float* dst, size_t dst_floats);

}  // namespace replica
