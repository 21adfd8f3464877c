#include "infer/model_weights.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "core/error.h"
#include "core/half.h"
#include "core/mmap.h"

namespace replica {

ModelWeights ModelWeights::Open(const std::string& path) {
  namespace fs = std::filesystem;
  Require(fs::is_directory(path), "--model {}: not a directory (expected a Hugging Face model "
          "directory, a checkpoint step-* directory or a run directory)", path);
  ModelWeights w;
  const bool is_checkpoint = fs::exists(fs::path(path) / kManifestFile) ||
                             fs::exists(fs::path(path) / kDoneFile) ||
                             fs::is_directory(fs::path(path) / kCheckpointsSubdir);
  if (is_checkpoint) {
    const CheckpointInfo info = ResolveCheckpoint(path);
    const Checkpoint ckpt = Checkpoint::Open(info.dir, /*verify=*/true);
    Require(!ckpt.model_config().is_null(), "{}: checkpoint has no {}", info.dir, kConfigFile);
    w.config_ = ModelConfig::FromHfJson(ckpt.model_config(), info.dir + "/" + kConfigFile);
    w.checkpoint_ = HfCheckpoint::Open((fs::path(info.dir) / kModelFile).string());
    w.source_ = "checkpoint:" + info.dir;
    w.step_ = info.step;
  } else {
    w.config_ = ModelConfig::FromHfFile((fs::path(path) / kConfigFile).string());
    w.checkpoint_ = HfCheckpoint::Open(path);
    w.source_ = "hf:" + path;
  }
  const HfCheckpoint& ck = w.checkpoint_;
  const ParamLayout layout = w.config_.BuildLayout();
  for (const TensorInfo* t : ck.tensors()) {
    Require(layout.Find(t->name) != nullptr,
            "{}: tensor '{}' {} is not a parameter of this model (wrong architecture or config?)",
            ck.FileOf(t->name), t->name, ShapeString(t->shape));
  }
  for (const ParamView& v : layout.views()) {
    const TensorInfo* t = ck.Find(v.name);
    Require(t != nullptr, "{}: missing parameter '{}' (expected shape {})", ck.path(), v.name,
            ShapeString(v.shape));
    Require(t->shape == v.shape, "{}: tensor '{}' has shape {}, the model expects {}",
            ck.FileOf(v.name), v.name, ShapeString(t->shape), ShapeString(v.shape));
    Require(t->dtype == DType::kF32 || t->dtype == DType::kBF16 || t->dtype == DType::kF16,
            "{}: tensor '{}' is stored as {}; inference reads F32, BF16 or F16 weights",
            ck.FileOf(v.name), v.name, DTypeName(t->dtype));
  }
  return w;
}

void ModelWeights::ToF32(const std::string& name, float* dst) const {
  const TensorInfo& t = checkpoint_.Get(name);
  const int64_t n = t.numel();
  constexpr int64_t kBlock = int64_t{1} << 16;
#pragma omp parallel for schedule(static) if (n > 4 * kBlock)
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    switch (t.dtype) {
      case DType::kF32:
        std::memcpy(dst + b, t.data + b * 4, static_cast<size_t>(e - b) * 4);
        break;
      case DType::kBF16: {
        const uint16_t* s = reinterpret_cast<const uint16_t*>(t.data);
        for (int64_t i = b; i < e; ++i) dst[i] = Bf16ToF32(s[i]);
        break;
      }
      case DType::kF16: {
        const uint16_t* s = reinterpret_cast<const uint16_t*>(t.data);
        for (int64_t i = b; i < e; ++i) dst[i] = F16ToF32(s[i]);
        break;
      }
      default:
        break;  // refused at Open()
    }
  }
}

void ModelWeights::Release(const std::string& name) const {
  const TensorInfo& t = checkpoint_.Get(name);
  ReleaseMappedPages(t.data, t.nbytes);
}

uint64_t ModelWeights::stored_bytes() const {
  uint64_t n = 0;
  for (const TensorInfo* t : checkpoint_.tensors()) n += t->nbytes;
  return n;
}

}  // namespace replica
