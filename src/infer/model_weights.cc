#include "infer/model_weights.h"

#include <algorithm>
#include <cmath>
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
    // A run directory's newest checkpoint may be pruned while it is read: read the newest again.
    bool sharded = false;
    ReadNewestCheckpoint(path, [&](const CheckpointInfo& info) {
      w = ModelWeights();
      const Checkpoint ckpt = Checkpoint::Open(info.dir, /*verify=*/false);  // Resolve verified
      Require(!ckpt.model_config().is_null(), "{}: checkpoint has no {}", info.dir, kConfigFile);
      w.config_ = ModelConfig::FromHfJson(ckpt.model_config(), info.dir + "/" + kConfigFile);
      w.source_ = "checkpoint:" + info.dir;
      w.step_ = info.step;
      sharded = ckpt.sharded().has_value();
      if (!sharded) {
        w.checkpoint_ = HfCheckpoint::Open((fs::path(info.dir) / kModelFile).string());
        return;
      }
      const ParamLayout layout = w.config_.BuildLayout();
      w.assembled_ = std::make_shared<FlatBuffer>(layout.total_floats());
      ckpt.LoadParams(layout, *w.assembled_);  // layout, ranges and finiteness checked
      w.assembled_dir_ = info.dir;
      for (const ParamView& v : layout.views()) {
        TensorInfo t;
        t.name = v.name;
        t.dtype = DType::kF32;
        t.shape = v.shape;
        t.data = reinterpret_cast<const uint8_t*>(w.assembled_->data() + v.offset);
        t.nbytes = v.numel * sizeof(float);
        w.assembled_index_[v.name] = w.assembled_tensors_.size();
        w.assembled_tensors_.push_back(std::move(t));
      }
    });
    if (sharded) return w;
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

const TensorInfo& ModelWeights::Get(const std::string& name) const {
  if (auto c = copied_.find(name); c != copied_.end()) return c->second;
  if (!assembled_) return checkpoint_.Get(name);
  auto it = assembled_index_.find(name);
  Require(it != assembled_index_.end(), "{}: no tensor '{}'", assembled_dir_, name);
  return assembled_tensors_[it->second];
}

const std::string& ModelWeights::FileOf(const std::string& name) const {
  return assembled_ ? assembled_dir_ : checkpoint_.FileOf(name);
}

void ModelWeights::ToF32(const std::string& name, float* dst) const {
  const TensorInfo& t = Get(name);
  const int64_t n = t.numel();
  constexpr int64_t kBlock = int64_t{1} << 16;
  int64_t first_bad = n;  // the first NaN/Inf element, n when none
#pragma omp parallel for schedule(static) reduction(min : first_bad) if (n > 4 * kBlock)
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
    for (int64_t i = b; i < e; ++i) {
      if (!std::isfinite(dst[i])) {
        first_bad = std::min(first_bad, i);
        break;
      }
    }
  }
  Require(first_bad == n, "{}: tensor '{}' holds {} at element {} (of {}): refusing non-finite "
          "weights", source_, name, dst[first_bad < n ? first_bad : 0], first_bad, n);
}

void ModelWeights::Release(const std::string& name) const {
  if (assembled_ || copied_.count(name)) return;  // not a mapping: in-memory weights stay
  const TensorInfo& t = checkpoint_.Get(name);
  ReleaseMappedPages(t.data, t.nbytes);
}

uint64_t ModelWeights::CopyToMemory(const std::vector<std::string>& names) {
  if (assembled_) return 0;
  std::vector<const TensorInfo*> todo;
  uint64_t bytes = 0;
  for (const std::string& n : names) {
    if (copied_.count(n)) continue;
    const TensorInfo& t = checkpoint_.Get(n);
    if (std::find(todo.begin(), todo.end(), &t) != todo.end()) continue;
    todo.push_back(&t);
    bytes += (t.nbytes + 63) / 64 * 64;  // each tensor on a cache-line boundary
  }
  if (todo.empty()) return 0;
  Require(copy_ == nullptr, "{}: weights were copied to memory already", source_);
  copy_ = std::make_shared<HugePageBuffer>(HugePageBuffer::Allocate(bytes));
  uint8_t* dst = copy_->data();
  for (const TensorInfo* t : todo) {
    const size_t n = t->nbytes;
    constexpr size_t kBlock = size_t{1} << 20;
    // Threads copy interleaved 1 MiB blocks in static order; the copy is exact whatever the split.
#pragma omp parallel for schedule(static)
    for (size_t b = 0; b < n; b += kBlock) std::memcpy(dst + b, t->data + b, std::min(kBlock, n - b));
    ReleaseMappedPages(t->data, n);
    TensorInfo c = *t;
    c.data = dst;
    copied_.emplace(t->name, std::move(c));
    dst += (n + 63) / 64 * 64;
  }
  return bytes;
}

uint64_t ModelWeights::stored_bytes() const {
  uint64_t n = 0;
  for (const TensorInfo& t : assembled_tensors_) n += t.nbytes;
  for (const TensorInfo* t : checkpoint_.tensors()) n += t->nbytes;
  return n;
}

}  // namespace replica
