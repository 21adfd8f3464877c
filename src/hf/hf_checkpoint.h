// A Hugging Face model directory's weights (docs/design.md §4): either one `model.safetensors` or the
// shards listed by `model.safetensors.index.json` ({"weight_map": {tensor name: shard file}}).
//
// HfCheckpoint::Open validates the whole directory before returning: every shard opens and
// validates (see safetensors.h), every indexed tensor is in the shard the index names, no shard
// holds a tensor the index does not list, and no name appears twice. Lookups then go by HF tensor
// name across shards. config.json is not read here (see model/model_config.h).
//
// HfCheckpointWriter writes the same layouts: one `model.safetensors` when the tensors fit in one
// shard, else `model-0000k-of-0000N.safetensors` shards (greedy in Add() order, at most
// max_shard_bytes of tensor data each unless a single tensor is larger) plus the index, which is
// written last. Each file is written atomically; the entry file of the other layout (a stale
// model.safetensors or index) is removed after the new one is complete, so readers never pick an
// old model up.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "io/safetensors.h"

namespace replica {

class HfCheckpoint {
 public:
  static constexpr const char* kSingleFile = "model.safetensors";
  static constexpr const char* kIndexFile = "model.safetensors.index.json";

  // `path` is a model directory (model.safetensors is preferred over the index when both exist,
  // as transformers does) or a single .safetensors file.
  static HfCheckpoint Open(const std::string& path);

  const std::string& path() const { return path_; }
  bool sharded() const { return sharded_; }
  size_t num_shards() const { return shards_.size(); }
  const SafetensorsFile& shard(size_t i) const { return shards_[i]; }

  // All tensors: shard by shard, each in data-offset order.
  const std::vector<const TensorInfo*>& tensors() const { return tensors_; }
  const TensorInfo* Find(const std::string& name) const;  // nullptr when absent
  const TensorInfo& Get(const std::string& name) const;   // Error naming the directory and tensor
  const std::string& FileOf(const std::string& name) const;  // the shard's path (Get() rules)

  std::vector<float> ReadF32(const std::string& name) const;  // from F32, BF16, F16, F64
  void ReadF32Into(const std::string& name, float* dst, size_t n) const;  // exactly n elements

 private:
  std::string path_;
  bool sharded_ = false;
  std::vector<SafetensorsFile> shards_;
  std::vector<const TensorInfo*> tensors_;
  std::unordered_map<std::string, size_t> index_;  // name -> shard
};

class HfCheckpointWriter {
 public:
  static constexpr uint64_t kDefaultMaxShardBytes = 5000ull * 1000 * 1000;  // transformers' "5GB"

  explicit HfCheckpointWriter(uint64_t max_shard_bytes = kDefaultMaxShardBytes);

  // As SafetensorsWriter: the data is referenced until Write() returns.
  void Add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data,
           size_t nbytes);
  void AddF32(const std::string& name, std::vector<int64_t> shape, const float* data,
              DType stored = DType::kF32);
  void SetMetadata(const std::string& key, const std::string& value);  // in every shard

  // Creates `dir` if needed and writes the weights into it. Returns the files written, relative
  // to dir (the index last when sharded). `written`, when given, hears the stored bytes written
  // so far after each weights file.
  std::vector<std::string> Write(const std::string& dir,
                                 const std::function<void(uint64_t bytes)>& written = {}) const;

 private:
  struct Item {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    const void* data;
    size_t nbytes;  // stored bytes
    bool from_f32;
  };
  uint64_t max_shard_bytes_;
  std::vector<Item> items_;
  std::map<std::string, std::string> metadata_;
  SafetensorsWriter validator_;  // rejects bad names/shapes at Add() time, as a single file would
};

}  // namespace replica
