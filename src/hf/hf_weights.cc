#include "hf/hf_weights.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/finite.h"

namespace replica {

void LoadHfWeights(const HfCheckpoint& ckpt, const ParamLayout& layout, FlatBuffer& params) {
  Require(params.size() >= layout.total_floats(),
          "loading {}: parameter buffer holds {} floats, layout needs {}", ckpt.path(),
          params.size(), layout.total_floats());
  for (const TensorInfo* t : ckpt.tensors()) {
    Require(layout.Find(t->name) != nullptr,
            "{}: tensor '{}' {} is not a parameter of this model (wrong architecture or config?)",
            ckpt.FileOf(t->name), t->name, ShapeString(t->shape));
  }
  for (const ParamView& v : layout.views()) {
    const TensorInfo* t = ckpt.Find(v.name);
    Require(t != nullptr, "{}: missing parameter '{}' (expected shape {})", ckpt.path(), v.name,
            ShapeString(v.shape));
    Require(t->shape == v.shape, "{}: tensor '{}' has shape {}, the model expects {}",
            ckpt.FileOf(v.name), v.name, ShapeString(t->shape), ShapeString(v.shape));
    ckpt.ReadF32Into(v.name, params.data() + v.offset, v.numel);
    RequireFiniteTensor(params.data() + v.offset, v.numel, ckpt.FileOf(v.name), v.name);
  }
}

void LoadHfWeights(const std::string& path, const ParamLayout& layout, FlatBuffer& params) {
  LoadHfWeights(HfCheckpoint::Open(path), layout, params);
}

std::vector<std::string> SaveHfModel(const std::string& dir, const ModelConfig& config,
                                     const ParamLayout& layout, const FlatBuffer& params,
                                     DType dtype, uint64_t max_shard_bytes) {
  Require(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16,
          "saving {}: weights can be stored as F32, BF16 or F16, not {}", dir, DTypeName(dtype));
  HfCheckpointWriter writer(max_shard_bytes);
  for (const ParamView& v : layout.views()) {
    writer.AddF32(v.name, v.shape, params.data() + v.offset, dtype);
  }
  std::vector<std::string> files = writer.Write(dir);
  nlohmann::json j = config.ToHfDirectoryJson();
  j["torch_dtype"] = dtype == DType::kF32 ? "float32" : dtype == DType::kBF16 ? "bfloat16" : "float16";
  WriteFileAtomic((std::filesystem::path(dir) / "config.json").string(), j.dump(2) + "\n");
  files.push_back("config.json");
  return files;
}

}  // namespace replica
