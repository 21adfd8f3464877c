#include "checkpoint/sharded_writer.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "checkpoint/format.h"
#include "checkpoint/sharded_format.h"
#include "core/atomic_file.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/finite.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "ops/host_copy.h"

namespace fs = std::filesystem;

namespace replica {

ShardedCheckpointWriter::ShardedCheckpointWriter(CheckpointWriterOptions options,
                                                 CheckpointGroup& group, const Backend& backend)
    : options_(std::move(options)), group_(group), backend_(backend) {
  if (group_.rank() == 0) RemoveInterruptedWrites(checkpoints_dir());
  group_.AllTrue(true);  // no rank writes into a step-*.tmp/ before rank 0 has cleaned up
}

ShardedCheckpointWriter::~ShardedCheckpointWriter() {
  if (thread_.joinable()) thread_.join();
  if (pending_)
    REPLICA_LOG_WARN("checkpoint: the write of {} was not completed (the run stopped before "
                     "every rank's files were tied together)",
                     job_.final_dir);
}

std::string ShardedCheckpointWriter::checkpoints_dir() const {
  return (fs::path(options_.run_dir) / kCheckpointsSubdir).string();
}

std::string ShardedCheckpointWriter::DirOf(int64_t step) const {
  return (fs::path(checkpoints_dir()) / CheckpointDirName(step)).string();
}

void ShardedCheckpointWriter::Reserve(size_t owned_floats) {
  if (!Snapshots() || params_.size() == owned_floats) return;
  Require(!pending_, "checkpoint: Reserve() while a write is in flight");
  params_ = FlatBuffer(owned_floats);
  m_ = FlatBuffer(owned_floats);
  v_ = FlatBuffer(owned_floats);
}

void ShardedCheckpointWriter::Save(int64_t step, const ParamLayout& layout,
                                   const OwnedShard& shard, int64_t adam_step,
                                   nlohmann::json state, nlohmann::json model_config) {
  if (pending_) Commit();
  Require(shard.begin <= shard.end && shard.end <= layout.total_floats(),
          "checkpoint: rank {} owns floats [{}, {}), the layout has {}", group_.rank(),
          shard.begin, shard.end, layout.total_floats());
  const size_t n = shard.end - shard.begin;
  Require(n == 0 || (shard.params && shard.m && shard.v),
          "checkpoint: rank {}: no parameters or Adam state given", group_.rank());
  // What the files are written from: a host snapshot when the write runs in the background
  // (training goes on meanwhile) or the backend's memory is not the host's, else the caller's
  // buffers.
  OwnedShard host = shard;
  snapshot_seconds_ = 0;
  if (Snapshots()) {
    const auto t0 = std::chrono::steady_clock::now();
    Reserve(n);
    const int64_t count = static_cast<int64_t>(n);
    if (n > 0) {
      CopyFloatsToHost(backend_, params_.data(), shard.params, count);
      CopyFloatsToHost(backend_, m_.data(), shard.m, count);
      CopyFloatsToHost(backend_, v_.data(), shard.v, count);
    }
    host.params = params_.data();
    host.m = m_.data();
    host.v = v_.data();
    snapshot_seconds_ = SecondsSince(t0);
  }
  // A checkpoint is what a resume or an export trusts: refuse NaN or Inf now, naming the tensor.
  const std::string what = fmt::format("checkpoint step {} (rank {})", step, group_.rank());
  for (const ParamView& v : layout.views()) {
    const size_t b = std::max(v.offset, shard.begin), e = std::min(v.offset + v.numel, shard.end);
    if (b >= e) continue;
    const size_t at = b - shard.begin;
    RequireFiniteTensor(host.params + at, e - b, what + " (parameters)", v.name);
    RequireFiniteTensor(host.m + at, e - b, what + " (Adam m)", v.name);
    RequireFiniteTensor(host.v + at, e - b, what + " (Adam v)", v.name);
  }
  Job job;
  job.step = step;
  job.shard = host;
  job.adam_step = adam_step;
  if (group_.rank() == 0) {
    job.state = std::move(state);
    job.model_config = std::move(model_config);
  }
  job.final_dir = DirOf(step);
  job.tmp = job.final_dir + ".tmp";
  layout_ = layout;
  job.layout = &layout_;
  job_ = std::move(job);
  pending_ = true;
  done_ = false;
  if (options_.background) {
    thread_ = std::thread([this] { WriteOwnFiles(); });
  } else {
    WriteOwnFiles();
    Commit();
  }
}

void ShardedCheckpointWriter::WriteOwnFiles() {
  const auto t0 = std::chrono::steady_clock::now();
  const int rank = group_.rank(), world = group_.world();
  nlohmann::json receipt = {{"rank", rank},
                            {"world", world},
                            {"begin", job_.shard.begin},
                            {"end", job_.shard.end}};
  std::string current;  // the file being written, for the error
  try {
    std::error_code ec;
    fs::create_directories(checkpoints_dir(), ec);
    Require(!ec, "{}: cannot create directory: {}", checkpoints_dir(), ec.message());
    // Every rank creates the shared .tmp directory; whoever is second finds it there.
    if (::mkdir(job_.tmp.c_str(), 0777) != 0 && errno != EEXIST)
      Fail("{}: cannot create directory: {}", job_.tmp, std::strerror(errno));
    nlohmann::json files = nlohmann::json::object();
    auto record = [&](const std::string& name) {
      const std::string path = (fs::path(job_.tmp) / name).string();
      files[name] = {{"bytes", fs::file_size(path)}, {"xxh3_64", FileXxh3Hex(path)}};
    };
    const std::string shard_name = ShardFileName(rank, world);
    current = shard_name;
    {
      const int64_t n = static_cast<int64_t>(job_.shard.end - job_.shard.begin);
      SafetensorsWriter w;
      w.SetMetadata("replica", kShardFormatTag);
      w.SetMetadata("begin", std::to_string(job_.shard.begin));
      w.SetMetadata("end", std::to_string(job_.shard.end));
      w.SetMetadata("total_floats", std::to_string(job_.layout->total_floats()));
      w.AddF32(ShardTensorName(ShardField::kParams), {n}, job_.shard.params);
      w.AddF32(ShardTensorName(ShardField::kAdamM), {n}, job_.shard.m);
      w.AddF32(ShardTensorName(ShardField::kAdamV), {n}, job_.shard.v);
      w.Write((fs::path(job_.tmp) / shard_name).string());  // temporary, fsync, rename
      record(shard_name);
    }
    fault::MaybeKill(fault::FaultPoint::kCheckpointFiles, job_.step);
    if (!job_.state.is_null()) {
      current = kStateFile;
      WriteFileAtomic((fs::path(job_.tmp) / kStateFile).string(), job_.state.dump(2) + "\n");
      record(kStateFile);
    }
    if (!job_.model_config.is_null()) {
      current = kConfigFile;
      WriteFileAtomic((fs::path(job_.tmp) / kConfigFile).string(),
                      job_.model_config.dump(2) + "\n");
      record(kConfigFile);
    }
    current.clear();
    FsyncDirectory(job_.tmp);
    receipt["files"] = std::move(files);
  } catch (const std::exception& e) {
    receipt["error"] = current.empty() ? std::string(e.what())
                                       : fmt::format("{}: {}", current, e.what());
  }
  receipt_ = receipt.dump();
  write_seconds_ = SecondsSince(t0);
  done_ = true;
}

void ShardedCheckpointWriter::Poll() {
  if (!pending_) return;
  if (!group_.AllTrue(done_.load())) return;
  Commit();
}

void ShardedCheckpointWriter::Finish() {
  if (pending_) Commit();
}

void ShardedCheckpointWriter::Commit() {
  if (thread_.joinable()) thread_.join();
  pending_ = false;
  const std::vector<std::string> receipts = group_.GatherToRoot(receipt_);
  const nlohmann::json mine = nlohmann::json::parse(receipt_);
  const std::string failed = fmt::format("checkpoint step {} ({}) failed", job_.step,
                                         job_.final_dir);
  if (group_.rank() != 0) {
    Require(!mine.contains("error"), "{}: rank {}: {}", failed, group_.rank(),
            mine.value("error", ""));
    uint64_t own_bytes = 0;
    for (const auto& [name, entry] : mine["files"].items()) own_bytes += entry["bytes"].get<uint64_t>();
    stats_ = {job_.step, job_.final_dir, snapshot_seconds_, write_seconds_, own_bytes};
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  bool renamed = false;
  uint64_t bytes = 0;
  try {
    std::string errors;
    for (const std::string& text : receipts) {
      const nlohmann::json r = nlohmann::json::parse(text);
      if (r.contains("error"))
        errors += fmt::format("{}rank {}: {}", errors.empty() ? "" : "; ", r["rank"].get<int>(),
                              r["error"].get<std::string>());
    }
    Require(errors.empty(), "{}", errors);
    ShardedManifest sm;
    sm.world = group_.world();
    sm.total_floats = job_.layout->total_floats();
    sm.adam_step = job_.adam_step;
    sm.layout = LayoutJson(*job_.layout);
    nlohmann::json files = nlohmann::json::object();
    for (const std::string& text : receipts) {
      const nlohmann::json r = nlohmann::json::parse(text);
      const int rank = r["rank"].get<int>();
      sm.shards.push_back({ShardFileName(rank, sm.world), rank, r["begin"].get<size_t>(),
                           r["end"].get<size_t>()});
      for (const auto& [name, entry] : r["files"].items()) {
        files[name] = entry;
        bytes += entry["bytes"].get<uint64_t>();
      }
    }
    nlohmann::json manifest = {{"format", "replica-checkpoint"}, {"version", kShardedFormatVersion},
                               {"step", job_.step},              {"checksum", "xxh3_64"},
                               {"files", files},                 {"sharded", ShardedSection(sm)}};
    // The ranks' ranges must tile the layout; refuse to publish a checkpoint that could not load.
    ParseShardedManifest(manifest, (fs::path(job_.tmp) / kManifestFile).string());
    PublishCheckpointDir(job_.tmp, job_.final_dir, job_.step, manifest.dump(2) + "\n", &renamed);
  } catch (const std::exception& e) {
    RemoveAllQuietly(renamed ? job_.final_dir : job_.tmp);
    Fail("{}: {}", failed, e.what());
  }
  PruneCheckpoints(checkpoints_dir(), job_.step, options_.keep);
  const double commit_seconds = SecondsSince(t0);
  stats_ = {job_.step, job_.final_dir, snapshot_seconds_, write_seconds_ + commit_seconds, bytes};
  REPLICA_LOG_INFO("checkpoint: wrote {} ({:.1f} MB in {} shard{}; snapshot {:.3f} s, own shard "
                   "{:.3f} s, commit {:.3f} s)",
                   job_.final_dir, bytes / 1e6, group_.world(), group_.world() == 1 ? "" : "s",
                   snapshot_seconds_, write_seconds_, commit_seconds);
}

}  // namespace replica
