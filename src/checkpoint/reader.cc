#include "checkpoint/reader.h"

#include <algorithm>
#include <cstring>
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

std::optional<CheckpointInfo> FindLatestValid(const std::string& run_dir, bool warn) {
  const std::string root = (fs::path(run_dir) / kCheckpointsSubdir).string();
  // What a writer changes: which step-* directories exist and which are complete.
  using Snapshot = std::vector<std::pair<int64_t, bool>>;
  auto snapshot = [](const std::vector<CheckpointDir>& dirs) {
    Snapshot out;
    for (const CheckpointDir& d : dirs) out.emplace_back(d.step, HasDone(d.path));
    return out;
  };
  // A writer with checkpoint.keep prunes older checkpoints once a newer one is complete, so a
  // candidate may vanish, or lose files, while it is verified. When nothing verified and the
  // directory changed meanwhile, look again (a few times: a writer cannot complete checkpoints
  // faster than they are verified for long).
  constexpr int kRounds = 16;
  std::vector<CheckpointDir> dirs = ListCheckpointDirs(root);
  Snapshot before = snapshot(dirs);
  for (int round = 0;; ++round) {
    std::vector<std::string> skipped;
    std::optional<CheckpointInfo> found;
    for (auto it = dirs.rbegin(); it != dirs.rend() && !found; ++it) {
      try {
        nlohmann::json manifest = VerifyCheckpoint(it->path);
        const int64_t step = manifest["step"].get<int64_t>();
        Require(step == it->step, "{}: manifest says step {}, directory name says {}", it->path,
                step, it->step);
        found = CheckpointInfo{it->path, it->step};
      } catch (const Error& e) {
        skipped.push_back(fmt::format("skipping checkpoint {}: {}", it->path, e.what()));
      }
    }
    if (!found && round + 1 < kRounds) {
      std::vector<CheckpointDir> again = ListCheckpointDirs(root);
      Snapshot now = snapshot(again);
      if (now != before) {
        dirs = std::move(again);
        before = std::move(now);
        continue;
      }
    }
    if (warn)
      for (const std::string& line : skipped) REPLICA_LOG_WARN("{}", line);
    return found;
  }
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

namespace {

bool IsRunDirectory(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  return !fs::exists(p / kManifestFile, ec) && !fs::exists(p / kDoneFile, ec) &&
         fs::is_directory(p / kCheckpointsSubdir, ec);
}

// Whether `info`, chosen in run directory `run_dir`, has stopped being its newest complete
// checkpoint: removed, its DONE gone, or a newer one complete (a writer prunes only after that).
bool Superseded(const std::string& run_dir, const CheckpointInfo& info) {
  std::error_code ec;
  if (!fs::is_directory(info.dir, ec) || !HasDone(info.dir)) return true;
  for (const CheckpointDir& d : ListCheckpointDirs((fs::path(run_dir) / kCheckpointsSubdir).string()))
    if (d.step > info.step && HasDone(d.path)) return true;
  return false;
}

}  // namespace

void ReadNewestCheckpoint(const std::string& path,
                          const std::function<void(const CheckpointInfo&)>& read) {
  const bool run = IsRunDirectory(path);
  for (int attempt = 1;; ++attempt) {
    const CheckpointInfo info = ResolveCheckpoint(path);
    try {
      read(info);
      return;
    } catch (const Error& e) {
      if (!run || !Superseded(path, info)) throw;
      if (attempt >= kCheckpointReadAttempts)
        Fail("{}: the newest checkpoint was replaced while it was read, {} times in a row (a "
             "writer saving every step with checkpoint.keep 1?); last: {}",
             path, attempt, e.what());
      REPLICA_LOG_INFO("{}: removed or replaced by a newer checkpoint while it was read; reading "
                       "the newest again", info.dir);
    }
  }
}

void LoadNewestParams(const std::string& path, Checkpoint& ckpt, const ParamLayout& layout,
                      FlatBuffer& params) {
  try {
    ckpt.LoadParams(layout, params);
    return;
  } catch (const Error&) {
    if (!IsRunDirectory(path) || !Superseded(path, CheckpointInfo{ckpt.dir(), ckpt.step()})) throw;
  }
  REPLICA_LOG_INFO("{}: removed or replaced by a newer checkpoint while it was read; reading the "
                   "newest again", ckpt.dir());
  ReadNewestCheckpoint(path, [&](const CheckpointInfo& info) {
    Checkpoint again = Checkpoint::Open(info.dir, /*verify=*/false);  // ResolveCheckpoint verified
    Require(again.model_config() == ckpt.model_config(),
            "{}: a newer checkpoint {} replaced {} while it was read, and its {} differs", path,
            info.dir, ckpt.dir(), kConfigFile);
    again.LoadParams(layout, params);
    ckpt = std::move(again);
  });
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
  if (manifest.contains("version") && manifest["version"] == kShardedFormatVersion) {
    c.version_ = kShardedFormatVersion;
    c.sharded_ = ParseShardedManifest(manifest, manifest_path);
  }
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
  if (sharded_) return true;  // every shard holds its range of m and v
  std::error_code ec;
  return fs::exists(fs::path(dir_) / kOptimFile, ec);
}

namespace {
void LoadF32Impl(const std::string& path, const ParamLayout& layout, const std::string& prefix,
                 float* dst, size_t dst_floats, const std::unordered_set<std::string>& extra,
                 const Checkpoint::ReadProgressFn& progress = {}) {
  size_t read = 0;
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
    read += v.numel;
    if (progress) progress(read);
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

void Checkpoint::LoadParams(const ParamLayout& layout, FlatBuffer& params,
                            const ReadProgressFn& progress) const {
  if (sharded_) {
    Require(params.size() >= layout.total_floats(),
            "{}: destination buffer has {} floats, needs {}", dir_, params.size(),
            layout.total_floats());
    ReadRange(ShardField::kParams, layout, 0, layout.total_floats(), params.data(), progress);
    return;
  }
  LoadF32Impl((fs::path(dir_) / kModelFile).string(), layout, "", params.data(), params.size(), {},
              progress);
}

int64_t Checkpoint::LoadOptimizer(const ParamLayout& layout, FlatBuffer& adam_m,
                                  FlatBuffer& adam_v) const {
  if (sharded_) {
    Require(adam_m.size() >= layout.total_floats() && adam_v.size() >= layout.total_floats(),
            "{}: Adam buffers have {} and {} floats, the layout needs {}", dir_, adam_m.size(),
            adam_v.size(), layout.total_floats());
    ReadRange(ShardField::kAdamM, layout, 0, layout.total_floats(), adam_m.data());
    ReadRange(ShardField::kAdamV, layout, 0, layout.total_floats(), adam_v.data());
    return sharded_->adam_step;
  }
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

int64_t Checkpoint::adam_step() const {
  if (sharded_) return sharded_->adam_step;
  const std::string path = (fs::path(dir_) / kOptimFile).string();
  Require(has_optimizer(), "{}: missing (a weights-only checkpoint has no optimizer state)", path);
  SafetensorsFile f = SafetensorsFile::Open(path);
  const TensorInfo& st = f.Get("step");
  Require(st.dtype == DType::kI64 && st.numel() == 1, "{}: tensor 'step' must be an I64 scalar",
          path);
  return f.ReadI64("step")[0];
}

namespace {

// The tensor of `layout` that holds float `at` ("padding" between tensors).
std::string TensorAt(const ParamLayout& layout, size_t at) {
  for (const ParamView& v : layout.views())
    if (at >= v.offset && at < v.offset + v.numel) return v.name;
  return "(alignment padding)";
}

}  // namespace

void Checkpoint::ReadRange(ShardField field, const ParamLayout& layout, size_t begin, size_t end,
                           float* dst, const ReadProgressFn& progress) const {
  Require(begin <= end && end <= layout.total_floats(),
          "{}: float range [{}, {}) is outside the layout's {} floats", dir_, begin, end,
          layout.total_floats());
  if (!sharded_) {
    ReadRangeV1(field, layout, begin, end, dst, progress);
    return;
  }
  const std::string manifest_path = (fs::path(dir_) / kManifestFile).string();
  RequireSameLayout(sharded_->layout, layout, manifest_path);
  Require(sharded_->total_floats == layout.total_floats(),
          "{}: 'total_floats' is {}, the model's layout has {}", manifest_path,
          sharded_->total_floats, layout.total_floats());
  const char* tensor = ShardTensorName(field);
  for (const ShardEntry& s : sharded_->shards) {
    const size_t b = std::max(begin, s.begin), e = std::min(end, s.end);
    if (b >= e) continue;  // only the shards that overlap the range are opened
    const std::string path = (fs::path(dir_) / s.file).string();
    SafetensorsFile f = SafetensorsFile::Open(path);
    const auto& meta = f.metadata();
    auto meta_is = [&](const char* key, size_t want) {
      auto it = meta.find(key);
      return it != meta.end() && it->second == std::to_string(want);
    };
    Require(meta_is("begin", s.begin) && meta_is("end", s.end),
            "{}: the file holds floats [{}, {}), the manifest says [{}, {}) (wrong range)", path,
            meta.count("begin") ? meta.at("begin") : "?", meta.count("end") ? meta.at("end") : "?",
            s.begin, s.end);
    const TensorInfo* t = f.Find(tensor);
    Require(t != nullptr, "{}: missing tensor '{}'", path, tensor);
    Require(t->dtype == DType::kF32 && t->shape.size() == 1 &&
                t->shape[0] == static_cast<int64_t>(s.end - s.begin),
            "{}: tensor '{}' is {} {}, the manifest's range [{}, {}) needs F32 [{}]", path, tensor,
            DTypeName(t->dtype), ShapeString(t->shape), s.begin, s.end, s.end - s.begin);
    float* out = dst + (b - begin);
    std::memcpy(out, t->data + (b - s.begin) * sizeof(float), (e - b) * sizeof(float));
    if (auto bad = FirstNonFinite(out, e - b))
      Fail("{}: tensor '{}' holds {} at float {} of the layout (in '{}')", path, tensor,
           out[*bad], b + *bad, TensorAt(layout, b + *bad));
    if (progress) progress(e - begin);
  }
}

void Checkpoint::ReadRangeV1(ShardField field, const ParamLayout& layout, size_t begin,
                             size_t end, float* dst, const ReadProgressFn& progress) const {
  const bool params = field == ShardField::kParams;
  const std::string path = (fs::path(dir_) / (params ? kModelFile : kOptimFile)).string();
  Require(params || has_optimizer(),
          "{}: missing (a weights-only checkpoint has no optimizer state)", path);
  const std::string prefix = field == ShardField::kAdamM ? "m." : field == ShardField::kAdamV ? "v." : "";
  std::memset(dst, 0, (end - begin) * sizeof(float));  // padding between tensors
  SafetensorsFile f = SafetensorsFile::Open(path);
  for (const ParamView& v : layout.views()) {
    const size_t b = std::max(begin, v.offset), e = std::min(end, v.offset + v.numel);
    if (b >= e) continue;
    const std::string name = prefix + v.name;
    const TensorInfo* t = f.Find(name);
    Require(t != nullptr, "{}: missing tensor '{}' (the checkpoint is for a different model?)",
            path, name);
    Require(t->dtype == DType::kF32, "{}: tensor '{}' is {}, checkpoints hold F32", path, name,
            DTypeName(t->dtype));
    Require(t->shape == v.shape, "{}: tensor '{}' has shape {}, the model expects {}", path, name,
            ShapeString(t->shape), ShapeString(v.shape));
    float* out = dst + (b - begin);
    std::memcpy(out, t->data + (b - v.offset) * sizeof(float), (e - b) * sizeof(float));
    RequireFiniteTensor(out, e - b, path, name);
    if (progress) progress(e - begin);
  }
}

}  // namespace replica
