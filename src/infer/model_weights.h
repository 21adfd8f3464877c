// The weights of a model for inference, memory-mapped in the dtype they are stored in: a Hugging
// Face directory (config.json + model.safetensors or model-0000k-of-0000N shards + index) or a
// replica checkpoint (a step-* directory, verified, or a run directory: its newest valid one).
// Nothing is converted or copied at open: callers widen one tensor (or one layer) at a time, so
// a 7B model in bf16 needs its 14.6 GB of file pages, not 29 GB of fp32. The exception is a
// sharded checkpoint (format version 2, checkpoint/sharded_format.h): its ranges are assembled
// into one fp32 buffer at open (`replica convert` turns it into a memory-mappable directory).
//
// Open() checks the whole directory before returning: config.json parses, every shard opens (a
// missing shard is an Error naming it), and every tensor of ModelConfig::BuildLayout() is present
// with its exact shape, stored as F32, BF16 or F16, with no extra tensor.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/huge_pages.h"
#include "hf/hf_checkpoint.h"
#include "model/model_config.h"
#include "tensor/flat_buffer.h"

namespace replica {

class ModelWeights {
 public:
  static ModelWeights Open(const std::string& path);

  const ModelConfig& config() const { return config_; }
  const std::string& source() const { return source_; }  // "hf:<dir>" or "checkpoint:<dir>"
  int64_t step() const { return step_; }                  // checkpoint step; -1 for HF
  const HfCheckpoint& checkpoint() const { return checkpoint_; }  // empty for a sharded one

  const TensorInfo& Get(const std::string& name) const;
  const std::string& FileOf(const std::string& name) const;  // the file (or directory) holding it
  // Widens tensor `name` to fp32 into dst (exactly numel floats), in parallel; Error naming the
  // tensor and element when a value is NaN or Inf.
  void ToF32(const std::string& name, float* dst) const;
  // Drops the resident pages of tensor `name` (see ReleaseMappedPages): after a layer has been
  // widened, its stored bytes need not stay in this process's memory.
  void Release(const std::string& name) const;
  // Bytes of all stored weights (what one decode step reads, the embedding excepted).
  uint64_t stored_bytes() const;

  // Copies the stored bytes of tensors `names` (their dtype unchanged) into one huge-page buffer
  // (core/huge_pages.h) and drops their file pages: from then on Get() and ToF32() read the copy,
  // and Release() of them does nothing. For a reader that streams the same weights again and
  // again (decoding) this removes the 4 KiB-page cost of the file mapping. All threads copy, in
  // 1 MiB blocks. Returns the bytes copied. A tensor already
  // copied, or held in memory already (a sharded checkpoint), is left as it is.
  uint64_t CopyToMemory(const std::vector<std::string>& names);
  // Bytes of the copy the kernel backs with huge pages (0 when nothing was copied).
  uint64_t copied_huge_bytes() const { return copy_ ? copy_->huge_bytes() : 0; }

 private:
  ModelConfig config_;
  HfCheckpoint checkpoint_;
  // A sharded checkpoint: its parameters assembled (F32), one TensorInfo per layout view.
  std::shared_ptr<FlatBuffer> assembled_;
  std::vector<TensorInfo> assembled_tensors_;
  std::unordered_map<std::string, size_t> assembled_index_;
  std::string assembled_dir_;
  // CopyToMemory: the copy and the TensorInfo of each copied tensor (data pointing into it).
  std::shared_ptr<HugePageBuffer> copy_;
  std::unordered_map<std::string, TensorInfo> copied_;
  std::string source_;
  int64_t step_ = -1;
};

}  // namespace replica
