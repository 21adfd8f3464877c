// Moving model weights between Hugging Face files and a parameter FlatBuffer, by HF tensor name
// (docs/design.md §4). Import accepts F32, BF16, F16 and F64 tensors (converted to fp32), from a model
// directory (single file or sharded) or one .safetensors file, and insists on an exact match with
// the layout: every parameter present with its exact shape, and no tensor the model does not have.
// Every mismatch is an Error naming the file, the tensor and the expected shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hf/hf_checkpoint.h"
#include "model/model_config.h"
#include "tensor/flat_buffer.h"

namespace replica {

// Fills every view of `layout` in `params` from the checkpoint.
void LoadHfWeights(const HfCheckpoint& checkpoint, const ParamLayout& layout, FlatBuffer& params);
// `path`: a model directory or a .safetensors file.
void LoadHfWeights(const std::string& path, const ParamLayout& layout, FlatBuffer& params);

// Writes `dir`/config.json and the weights (model.safetensors, or shards + index past
// max_shard_bytes) stored as `dtype` (F32, BF16 or F16). Returns the files written, relative to dir.
std::vector<std::string> SaveHfModel(const std::string& dir, const ModelConfig& config,
                                     const ParamLayout& layout, const FlatBuffer& params,
                                     DType dtype = DType::kF32,
                                     uint64_t max_shard_bytes = HfCheckpointWriter::kDefaultMaxShardBytes);

}  // namespace replica
