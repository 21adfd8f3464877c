#include "checkpoint/format.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "checkpoint/sharded_format.h"
#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/mmap.h"

namespace fs = std::filesystem;

namespace replica {

std::string CheckpointDirName(int64_t step) { return fmt::format("step-{:08d}", step); }

std::optional<int64_t> ParseCheckpointDirName(std::string_view name) {
  constexpr std::string_view kPrefix = "step-";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return {};
  std::string_view digits = name.substr(kPrefix.size());
  if (digits.size() > 18) return {};
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return {};
    v = v * 10 + (c - '0');
  }
  return v;
}

std::vector<CheckpointDir> ListCheckpointDirs(const std::string& checkpoints_dir) {
  std::vector<CheckpointDir> out;
  std::error_code ec;
  const fs::file_status st = fs::status(checkpoints_dir, ec);
  if (st.type() == fs::file_type::not_found) {
    std::error_code link_ec;
    Require(!fs::is_symlink(fs::symlink_status(checkpoints_dir, link_ec)),
            "{}: is a symbolic link to a missing path: cannot look for checkpoints in it",
            checkpoints_dir);
    return out;  // a fresh run
  }
  Require(!ec, "{}: cannot read the checkpoints directory: {}", checkpoints_dir, ec.message());
  if (st.type() != fs::file_type::directory) {
    Fail("{}: is {}, not a directory: cannot look for checkpoints in it", checkpoints_dir,
         st.type() == fs::file_type::regular ? "a regular file" : "not a directory");
  }
  fs::directory_iterator it(checkpoints_dir, ec);
  Require(!ec, "{}: cannot list the checkpoints directory: {}", checkpoints_dir, ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    Require(!ec, "{}: cannot list the checkpoints directory: {}", checkpoints_dir, ec.message());
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    auto step = ParseCheckpointDirName(it->path().filename().string());
    if (step) out.push_back({*step, it->path().string()});
  }
  Require(!ec, "{}: cannot list the checkpoints directory: {}", checkpoints_dir, ec.message());
  std::sort(out.begin(), out.end(),
            [](const CheckpointDir& a, const CheckpointDir& b) { return a.step < b.step; });
  return out;
}

bool HasDone(const std::string& checkpoint_dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(checkpoint_dir) / kDoneFile, ec);
}

static std::string Hex64(uint64_t v) { return fmt::format("{:016x}", v); }

std::string FileXxh3Hex(const std::string& path) {
  MappedFile f = MappedFile::Open(path);
  return Hex64(Xxh3_64(f.data(), f.size()));
}

nlohmann::json BuildManifest(const std::string& dir, int64_t step,
                             const std::vector<std::string>& files) {
  nlohmann::json entries = nlohmann::json::object();
  for (const std::string& name : files) {
    std::string path = (fs::path(dir) / name).string();
    MappedFile f = MappedFile::Open(path);
    entries[name] = {{"bytes", f.size()}, {"xxh3_64", Hex64(Xxh3_64(f.data(), f.size()))}};
  }
  return {{"format", "replica-checkpoint"}, {"version", 1},     {"step", step},
          {"checksum", "xxh3_64"},          {"files", entries}};
}

std::string DoneContents(int64_t step, const std::string& manifest_text) {
  return fmt::format("step {}\nmanifest_xxh3_64 {}\n", step,
                     Hex64(Xxh3_64(manifest_text.data(), manifest_text.size())));
}

nlohmann::json VerifyCheckpoint(const std::string& dir) {
  const fs::path d(dir);
  std::error_code ec;
  Require(fs::is_directory(d, ec), "{}: not a directory", dir);
  const std::string done_path = (d / kDoneFile).string();
  const std::string manifest_path = (d / kManifestFile).string();
  Require(fs::is_regular_file(done_path, ec),
          "{}: incomplete checkpoint: no DONE marker (the write was interrupted)", dir);
  Require(fs::is_regular_file(manifest_path, ec), "{}: missing (checkpoint has DONE but no manifest)",
          manifest_path);
  const std::string manifest_text = ReadFile(manifest_path);
  nlohmann::json manifest = nlohmann::json::parse(manifest_text, nullptr, false);
  Require(!manifest.is_discarded() && manifest.is_object(), "{}: not a JSON object",
          manifest_path);
  Require(manifest.value("format", "") == "replica-checkpoint",
          "{}: field 'format' must be \"replica-checkpoint\"", manifest_path);
  Require(manifest.value("checksum", "") == "xxh3_64", "{}: field 'checksum' must be \"xxh3_64\"",
          manifest_path);
  Require(manifest.contains("step") && manifest["step"].is_number_integer(),
          "{}: field 'step' must be an integer", manifest_path);
  const int64_t step = manifest["step"].get<int64_t>();
  Require(ReadFile(done_path) == DoneContents(step, manifest_text),
          "{}: does not match {} (manifest changed or corrupt)", done_path, manifest_path);
  Require(manifest.contains("files") && manifest["files"].is_object(),
          "{}: field 'files' must be an object", manifest_path);
  Require(manifest.contains("version") && manifest["version"].is_number_integer(),
          "{}: field 'version' must be an integer", manifest_path);
  const int64_t version = manifest["version"].get<int64_t>();
  if (version == kShardedFormatVersion) {
    ParseShardedManifest(manifest, manifest_path);  // shards listed, ranges cover the layout
  } else {
    Require(version == 1, "{}: format version {} is not one this build reads (1 or {})",
            manifest_path, version, kShardedFormatVersion);
    Require(manifest["files"].contains(kModelFile), "{}: does not list {}", manifest_path,
            kModelFile);
  }
  for (const auto& [name, entry] : manifest["files"].items()) {
    Require(name.find('/') == std::string::npos && name != ".." && !name.empty(),
            "{}: bad file name '{}'", manifest_path, name);
    Require(entry.is_object() && entry.contains("bytes") && entry["bytes"].is_number_unsigned() &&
                entry.contains("xxh3_64") && entry["xxh3_64"].is_string(),
            "{}: files.{} must have unsigned 'bytes' and string 'xxh3_64'", manifest_path, name);
    const std::string path = (d / name).string();
    struct stat st {};
    Require(::stat(path.c_str(), &st) == 0, "{}: missing (listed in the manifest)", path);
    const uint64_t want = entry["bytes"].get<uint64_t>();
    Require(static_cast<uint64_t>(st.st_size) == want,
            "{}: size {} bytes, manifest says {} (truncated or overwritten)", path,
            static_cast<uint64_t>(st.st_size), want);
    const std::string got = FileXxh3Hex(path);
    Require(got == entry["xxh3_64"].get<std::string>(),
            "{}: checksum mismatch (xxh3_64 {} on disk, {} in manifest): corrupt", path, got,
            entry["xxh3_64"].get<std::string>());
  }
  return manifest;
}

}  // namespace replica
