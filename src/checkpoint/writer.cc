#include "checkpoint/writer.h"

#include <chrono>
#include <filesystem>

#include "core/clock.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/finite.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "ops/host_copy.h"
#include "checkpoint/format.h"
#include "core/fault.h"

namespace fs = std::filesystem;

namespace replica {

void RemoveAllQuietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) REPLICA_LOG_WARN("checkpoint: could not remove {}: {}", path, ec.message());
}

namespace {

void WriteFiles(const std::string& dir, const CheckpointContents& c,
                std::vector<std::string>* files) {
  const ParamLayout& layout = *c.layout;
  {
    SafetensorsWriter w;
    for (const ParamView& v : layout.views()) w.AddF32(v.name, v.shape, c.params + v.offset);
    w.Write((fs::path(dir) / kModelFile).string());
    files->push_back(kModelFile);
  }
  fault::MaybeKill(fault::FaultPoint::kCheckpointFiles, c.step);
  if (c.adam_m) {
    Require(c.adam_v != nullptr, "checkpoint: Adam m given without v");
    SafetensorsWriter w;
    for (const ParamView& v : layout.views()) w.AddF32("m." + v.name, v.shape, c.adam_m + v.offset);
    for (const ParamView& v : layout.views()) w.AddF32("v." + v.name, v.shape, c.adam_v + v.offset);
    w.AddCopy("step", DType::kI64, {}, &c.adam_step, sizeof(int64_t));
    w.Write((fs::path(dir) / kOptimFile).string());
    files->push_back(kOptimFile);
  }
  if (!c.state.is_null()) {
    WriteFileAtomic((fs::path(dir) / kStateFile).string(), c.state.dump(2) + "\n");
    files->push_back(kStateFile);
  }
  if (!c.model_config.is_null()) {
    WriteFileAtomic((fs::path(dir) / kConfigFile).string(), c.model_config.dump(2) + "\n");
    files->push_back(kConfigFile);
  }
  for (const auto& [name, contents] : c.extra_files) {
    Require(name.find('/') == std::string::npos && name != kManifestFile && name != kDoneFile,
            "checkpoint: bad extra file name '{}'", name);
    WriteFileAtomic((fs::path(dir) / name).string(), contents);
    files->push_back(name);
  }
}

}  // namespace

void PublishCheckpointDir(const std::string& tmp, const std::string& final_dir, int64_t step,
                          const std::string& manifest, bool* renamed) {
  const fs::path parent = fs::path(final_dir).parent_path();
  std::error_code ec;
  WriteFileAtomic((fs::path(tmp) / kManifestFile).string(), manifest);
  FsyncDirectory(tmp);

  // rename() cannot replace a non-empty directory: move an existing one (an incomplete leftover,
  // or an older write of the same step) aside first.
  const std::string aside = final_dir + ".replaced";
  if (fs::exists(final_dir, ec)) {
    fs::remove_all(aside, ec);
    fs::rename(final_dir, aside, ec);
    Require(!ec, "{}: cannot move aside the existing directory: {}", final_dir, ec.message());
  }
  fs::rename(tmp, final_dir, ec);
  Require(!ec, "{}: cannot rename to {}: {}", tmp, final_dir, ec.message());
  *renamed = true;
  FsyncDirectory(parent.empty() ? "." : parent.string());
  if (fs::exists(aside, ec)) RemoveAllQuietly(aside);

  fault::MaybeKill(fault::FaultPoint::kCheckpointBeforeDone, step);
  WriteFileAtomic((fs::path(final_dir) / kDoneFile).string(), DoneContents(step, manifest));
}

void WriteCheckpointDir(const std::string& final_dir, const CheckpointContents& c) {
  Require(c.layout != nullptr && c.params != nullptr, "checkpoint: no parameters given");
  const std::string tmp = final_dir + ".tmp";
  const fs::path parent = fs::path(final_dir).parent_path();
  bool renamed = false;
  try {
    std::error_code ec;
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      Require(!ec, "{}: cannot create directory: {}", parent.string(), ec.message());
    }
    if (fs::exists(tmp, ec)) fs::remove_all(tmp, ec);  // leftover of a crashed attempt
    fs::create_directory(tmp, ec);
    Require(!ec, "{}: cannot create directory: {}", tmp, ec.message());

    std::vector<std::string> files;
    WriteFiles(tmp, c, &files);
    const std::string manifest = BuildManifest(tmp, c.step, files).dump(2) + "\n";
    PublishCheckpointDir(tmp, final_dir, c.step, manifest, &renamed);
  } catch (const std::exception& e) {
    // Free the space of the partial write; earlier checkpoints are separate directories.
    RemoveAllQuietly(renamed ? final_dir : tmp);
    Fail("checkpoint step {} ({}) failed: {}", c.step, final_dir, e.what());
  }
}

void PruneCheckpoints(const std::string& checkpoints_dir, int64_t newest_step, int keep) {
  try {
    std::vector<CheckpointDir> complete;
    for (const CheckpointDir& d : ListCheckpointDirs(checkpoints_dir)) {
      if (d.step > newest_step) {
        REPLICA_LOG_INFO("checkpoint: removing {}: newer than the resumed trajectory's step {}",
                         d.path, newest_step);
        RemoveAllQuietly(d.path);
      } else if (!HasDone(d.path)) {
        if (d.step < newest_step) {
          REPLICA_LOG_INFO("checkpoint: removing incomplete {}", d.path);
          RemoveAllQuietly(d.path);
        }
      } else {
        complete.push_back(d);
      }
    }
    if (keep > 0 && complete.size() > static_cast<size_t>(keep)) {
      for (size_t i = 0; i + keep < complete.size(); ++i) {
        if (complete[i].step == newest_step) continue;
        RemoveAllQuietly(complete[i].path);
      }
    }
    FsyncDirectory(checkpoints_dir);
  } catch (const std::exception& e) {
    REPLICA_LOG_WARN("checkpoint: pruning {} failed: {}", checkpoints_dir, e.what());
  }
}

void RemoveInterruptedWrites(const std::string& checkpoints_dir) {
  std::error_code ec;
  const fs::path dir(checkpoints_dir);
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    auto ends_with = [&](std::string_view suffix) {
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (name.rfind("step-", 0) == 0 && (ends_with(".tmp") || ends_with(".replaced"))) {
      REPLICA_LOG_INFO("checkpoint: removing leftover of an interrupted write: {}",
                       entry.path().string());
      RemoveAllQuietly(entry.path().string());
    }
  }
}

CheckpointWriter::CheckpointWriter(CheckpointWriterOptions options, const Backend& backend)
    : options_(std::move(options)), backend_(backend) {
  RemoveInterruptedWrites(checkpoints_dir());
}

CheckpointWriter::~CheckpointWriter() {
  if (thread_.joinable()) thread_.join();
  if (error_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      REPLICA_LOG_ERROR("{}", e.what());
    }
  }
}

std::string CheckpointWriter::checkpoints_dir() const {
  return (fs::path(options_.run_dir) / kCheckpointsSubdir).string();
}

void CheckpointWriter::Wait() {
  if (thread_.joinable()) thread_.join();
  if (error_) {
    std::exception_ptr e = std::exchange(error_, nullptr);
    std::rethrow_exception(e);
  }
}

CheckpointWriteStats CheckpointWriter::LastStats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void CheckpointWriter::Reserve(const ParamLayout& layout) {
  const size_t n = layout.total_floats();
  if (!Snapshots() || params_.size() == n) return;
  Require(!InFlight(), "checkpoint: Reserve() while a write is in flight");
  params_ = FlatBuffer(n);
  m_ = FlatBuffer(n);
  v_ = FlatBuffer(n);
}

void CheckpointWriter::Save(int64_t step, const ParamLayout& layout, const FlatBuffer& params,
                            const FlatBuffer& adam_m, const FlatBuffer& adam_v, int64_t adam_step,
                            nlohmann::json state, nlohmann::json model_config) {
  Wait();
  const size_t n = layout.total_floats();
  Require(params.size() >= n, "checkpoint: parameter buffer has {} floats, layout needs {}",
          params.size(), n);
  Require(adam_m.size() >= n && adam_v.size() >= n,
          "checkpoint: Adam buffers have {} and {} floats, layout needs {}", adam_m.size(),
          adam_v.size(), n);
  CheckpointContents c;
  c.step = step;
  c.adam_step = adam_step;
  c.state = std::move(state);
  c.model_config = std::move(model_config);
  if (Snapshots()) {
    const auto t0 = std::chrono::steady_clock::now();
    Reserve(layout);
    layout_ = layout;
    // The snapshot is the only part of a save that stalls training: the backend's Copy uses the
    // machine's memory bandwidth (and no threads for a small model); a backend whose memory is
    // not the host's copies out through CopyToHost.
    const int64_t count = static_cast<int64_t>(n);
    CopyFloatsToHost(backend_, params_.data(), params.data(), count);
    CopyFloatsToHost(backend_, m_.data(), adam_m.data(), count);
    CopyFloatsToHost(backend_, v_.data(), adam_v.data(), count);
    pending_snapshot_seconds_ = SecondsSince(t0);
    c.layout = &layout_;
    c.params = params_.data();
    c.adam_m = m_.data();
    c.adam_v = v_.data();
  } else {
    // Synchronous from host memory: the caller's buffers cannot change during the write, so no
    // copy (and no second copy of the model in memory).
    pending_snapshot_seconds_ = 0;
    c.layout = &layout;
    c.params = params.data();
    c.adam_m = adam_m.data();
    c.adam_v = adam_v.data();
  }
  // A checkpoint is what a resume or an export trusts: NaN or Inf in it would be loaded back (and
  // refused) later; refuse now, naming the tensor, and leave the previous checkpoints as they are.
  const std::string what = fmt::format("checkpoint step {}", step);
  for (const ParamView& v : layout.views()) {
    RequireFiniteTensor(c.params + v.offset, v.numel, what + " (parameters)", v.name);
    RequireFiniteTensor(c.adam_m + v.offset, v.numel, what + " (Adam m)", v.name);
    RequireFiniteTensor(c.adam_v + v.offset, v.numel, what + " (Adam v)", v.name);
  }
  std::string final_dir = (fs::path(checkpoints_dir()) / CheckpointDirName(step)).string();
  if (options_.background) {
    thread_ = std::thread([this, c = std::move(c), final_dir = std::move(final_dir)]() mutable {
      Run(std::move(c), std::move(final_dir));
    });
  } else {
    Run(std::move(c), std::move(final_dir));
    Wait();
  }
}

void CheckpointWriter::Run(CheckpointContents c, std::string final_dir) {
  try {
    const auto t0 = std::chrono::steady_clock::now();
    WriteCheckpointDir(final_dir, c);
    PruneCheckpoints(checkpoints_dir(), c.step, options_.keep);
    CheckpointWriteStats s;
    s.step = c.step;
    s.dir = final_dir;
    s.snapshot_seconds = pending_snapshot_seconds_;
    s.write_seconds = SecondsSince(t0);
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(final_dir, ec))
      if (entry.is_regular_file(ec)) s.bytes += entry.file_size(ec);
    REPLICA_LOG_INFO("checkpoint: wrote {} ({:.1f} MB; snapshot {:.3f} s, write {:.3f} s)",
                     final_dir, s.bytes / 1e6, s.snapshot_seconds, s.write_seconds);
    std::lock_guard<std::mutex> lock(mu_);
    stats_ = s;
  } catch (...) {
    error_ = std::current_exception();
  }
}

}  // namespace replica
