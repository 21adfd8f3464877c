#include "checkpoint/reader.h"

#include <filesystem>
#include <unordered_set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/finite.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "checkpoint/format.h"

namespace fs = std::filesystem;

namespace replica {

std::optional<CheckpointInfo> FindLatestValid(const std::string& run_dir) {
  const std::string root = (fs::path(run_dir) / kCheckpointsSubdir).string();
  std::vector<CheckpointDir> dirs = ListCheckpointDirs(root);
  for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
    try {
      nlohmann::json manifest = VerifyCheckpoint(it->path);
      const int64_t step = manifest["step"].get<int64_t>();
      Require(step == it->step, "{}: manifest says step {}, directory name says {}", it->path,
              step, it->step);
      return CheckpointInfo{it->path, it->step};
    } catch (const Error& e) {
      REPLICA_LOG_WARN("skipping checkpoint {}: {}", it->path, e.what());
    }
  }
  return std::nullopt;
}

CheckpointInfo ResolveCheckpoint(const std::string& path) {
  std::error_code ec;
  Require(fs::is_directory(path, ec), "{}: no such directory (expected a checkpoint or run directory)",
          path);
  const fs::path p(path);
  if (fs::exists(p / kManifestFile, ec) || fs::exists(p / kDoneFile, ec)) {
    nlohmann::json manifest = VerifyCheckpoint(path);
    return CheckpointInfo{path, manifest["step"].get<int64_t>()};
  }
  if (fs::is_directory(p / kCheckpointsSubdir, ec)) {
    auto found = FindLatestValid(path);
    Require(found.has_value(), "{}: no complete and valid checkpoint under {}/", path,
            kCheckpointsSubdir);
    return *found;
  }
  Fail("{}: neither a checkpoint directory (no {}) nor a run directory (no {}/)", path,
       kManifestFile, kCheckpointsSubdir);
}

Checkpoint Checkpoint::Open(const std::string& dir, bool verify) {
  Checkpoint c;
  c.dir_ = dir;
  nlohmann::json manifest;
  const std::string manifest_path = (fs::path(dir) / kManifestFile).string();
  if (verify) {
    manifest = VerifyCheckpoint(dir);
  } else {
    manifest = nlohmann::json::parse(ReadFile(manifest_path), nullptr, false);
    Require(manifest.is_object() && manifest.contains("step") &&
                manifest["step"].is_number_integer(),
            "{}: not a checkpoint manifest with an integer 'step'", manifest_path);
  }
  c.step_ = manifest["step"].get<int64_t>();
  auto read_json = [&](const char* name) -> nlohmann::json {
    const fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (!fs::exists(p, ec)) return nullptr;
    nlohmann::json j = nlohmann::json::parse(ReadFile(p.string()), nullptr, false);
    Require(!j.is_discarded(), "{}: invalid JSON", p.string());
    return j;
  };
  c.state_ = read_json(kStateFile);
  c.model_config_ = read_json(kConfigFile);
  return c;
}

bool Checkpoint::has_optimizer() const {
  std::error_code ec;
  return fs::exists(fs::path(dir_) / kOptimFile, ec);
}

namespace {
void LoadF32Impl(const std::string& path, const ParamLayout& layout, const std::string& prefix,
                 float* dst, size_t dst_floats, const std::unordered_set<std::string>& extra) {
  SafetensorsFile f = SafetensorsFile::Open(path);
  Require(dst_floats >= layout.total_floats(), "{}: destination buffer has {} floats, needs {}",
          path, dst_floats, layout.total_floats());
  std::unordered_set<std::string> expected = extra;
  for (const ParamView& v : layout.views()) {
    const std::string name = prefix + v.name;
    expected.insert(name);
    const TensorInfo* t = f.Find(name);
    Require(t != nullptr, "{}: missing tensor '{}' (the checkpoint is for a different model?)",
            path, name);
    Require(t->dtype == DType::kF32, "{}: tensor '{}' is {}, checkpoints hold F32", path, name,
            DTypeName(t->dtype));
    Require(t->shape == v.shape, "{}: tensor '{}' has shape {}, the model expects {}", path, name,
            ShapeString(t->shape), ShapeString(v.shape));
    f.ReadF32Into(name, dst + v.offset, v.numel);
    RequireFiniteTensor(dst + v.offset, v.numel, path, name);
  }
  for (const TensorInfo& t : f.tensors())
    Require(expected.count(t.name) > 0,
            "{}: unexpected tensor '{}' (the checkpoint is for a different model?)", path, t.name);
}
}  // namespace

void LoadF32ByName(const std::string& path, const ParamLayout& layout, const std::string& prefix,
                   float* dst, size_t dst_floats) {
  LoadF32Impl(path, layout, prefix, dst, dst_floats, {});
}

void Checkpoint::LoadParams(const ParamLayout& layout, FlatBuffer& params) const {
  LoadF32ByName((fs::path(dir_) / kModelFile).string(), layout, "", params.data(), params.size());
}

int64_t Checkpoint::LoadOptimizer(const ParamLayout& layout, FlatBuffer& adam_m,
                                  FlatBuffer& adam_v) const {
  const std::string path = (fs::path(dir_) / kOptimFile).string();
  Require(has_optimizer(), "{}: missing (a weights-only checkpoint has no optimizer state)", path);
  SafetensorsFile f = SafetensorsFile::Open(path);
  const TensorInfo& st = f.Get("step");
  Require(st.dtype == DType::kI64 && st.numel() == 1, "{}: tensor 'step' must be an I64 scalar",
          path);
  const int64_t step = f.ReadI64("step")[0];
  // m.* and v.* live in one file; check each half separately so errors name the right tensor.
  std::unordered_set<std::string> others{"step"};
  for (const ParamView& v : layout.views()) others.insert("v." + v.name);
  LoadF32Impl(path, layout, "m.", adam_m.data(), adam_m.size(), others);
  others = {"step"};
  for (const ParamView& v : layout.views()) others.insert("m." + v.name);
  LoadF32Impl(path, layout, "v.", adam_v.data(), adam_v.size(), others);
  return step;
}

}  // namespace replica
