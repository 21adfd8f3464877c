// Format version 2 of a checkpoint directory (docs/design.md §4): the state is stored as one file
// per rank, each holding that rank's contiguous range of the flat parameter layout, so no process
// ever gathers the whole model and any world size can read it back.
//
//   step-NNNNNNNN/
//     shard-RRRRR-of-WWWWW.safetensors   rank R's floats [begin, end) of the flat layout
//                                        (ParamLayout offsets, alignment padding included):
//                                          params  F32 [end - begin]   fp32 master weights
//                                          adam_m  F32 [end - begin]   Adam first moment
//                                          adam_v  F32 [end - begin]   Adam second moment
//                                        __metadata__: replica "replica-shard", begin, end,
//                                        total_floats (decimal strings)
//     state.json, config.json            as in version 1 (rank 0 writes them)
//     MANIFEST.json                      version 1's fields with "version": 2, every file above in
//                                        "files", and
//       "sharded": {"world": R, "total_floats": P, "adam_step": t,
//                   "shards": [{"file": ..., "rank": r, "begin": b, "end": e}, ...],
//                   "layout": [[HF name, offset, [shape...]], ...]}
//     DONE                               as in version 1, written last
//
// The shards are listed in rank order and cover [0, P) exactly, without gap or overlap (a manifest
// that does not is refused). "layout" records the tensors the floats belong to, so a checkpoint of
// another model is refused naming the first tensor that differs, and `convert` can name tensors.
#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/flat_buffer.h"

namespace replica {

inline constexpr int kShardedFormatVersion = 2;
inline constexpr const char* kShardFormatTag = "replica-shard";

// The three float arrays a shard holds.
enum class ShardField { kParams, kAdamM, kAdamV };
const char* ShardTensorName(ShardField field);  // "params", "adam_m", "adam_v"
inline constexpr int kShardFields = 3;
// Bytes of the three arrays of a shard of `owned_floats` floats: its file's tensor data, and the
// background snapshot the writer (sharded_writer.h) copies them into before writing.
inline uint64_t ShardStateBytes(size_t owned_floats) {
  return static_cast<uint64_t>(kShardFields) * sizeof(float) * owned_floats;
}

std::string ShardFileName(int rank, int world);  // "shard-00002-of-00004.safetensors"

struct ShardEntry {
  std::string file;
  int rank = 0;
  size_t begin = 0, end = 0;  // floats of the flat layout
};

struct ShardedManifest {
  int world = 0;
  size_t total_floats = 0;
  int64_t adam_step = 0;
  std::vector<ShardEntry> shards;  // rank order, covering [0, total_floats)
  nlohmann::json layout;           // [[name, offset, [shape...]], ...]
};

nlohmann::json LayoutJson(const ParamLayout& layout);
nlohmann::json ShardedSection(const ShardedManifest& m);

// Parses manifest["sharded"]; Error naming `manifest_path` and the field when it is malformed,
// when a shard file is not listed in manifest["files"], or when the ranges do not cover
// [0, total_floats) in rank order without gap or overlap.
ShardedManifest ParseShardedManifest(const nlohmann::json& manifest,
                                     const std::string& manifest_path);

// Error naming `where` and the first tensor that differs (name, shape or offset) unless the
// recorded layout is `layout`'s.
void RequireSameLayout(const nlohmann::json& recorded, const ParamLayout& layout,
                       const std::string& where);

}  // namespace replica
