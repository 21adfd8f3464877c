#include "hf/hf_checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <system_error>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "tensor/flat_buffer.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A shard name from an index must stay inside the model directory.
bool SafeShardName(const std::string& name) {
  if (name.empty()) return false;
  fs::path p(name);
  if (p.is_absolute()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

std::string Join(const std::string& dir, const std::string& file) {
  return (fs::path(dir) / file).string();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Reading

HfCheckpoint HfCheckpoint::Open(const std::string& path) {
  HfCheckpoint ck;
  ck.path_ = path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  Require(!ec && fs::exists(st), "{}: no such file or directory", path);

  std::vector<std::string> shard_names;            // paths relative to the directory
  std::map<std::string, std::string> weight_map;   // only when sharded
  std::string index_path;
  if (fs::is_regular_file(st)) {
    ck.shards_.push_back(SafetensorsFile::Open(path));
  } else {
    Require(fs::is_directory(st), "{}: neither a model directory nor a safetensors file", path);
    const std::string single = Join(path, kSingleFile);
    index_path = Join(path, kIndexFile);
    if (fs::exists(single, ec)) {
      ck.shards_.push_back(SafetensorsFile::Open(single));
    } else {
      Require(fs::exists(index_path, ec), "{}: no {} or {} in this directory", path, kSingleFile,
              kIndexFile);
      ck.sharded_ = true;
      const json index = ParseJson(ReadFile(index_path), index_path);
      Require(index.is_object(), "{}: must be a JSON object, got {}", index_path, index.type_name());
      auto wm = index.find("weight_map");
      Require(wm != index.end(), "{}: missing 'weight_map'", index_path);
      Require(wm->is_object(), "{}: 'weight_map' must be an object of tensor name -> shard file, "
              "got {}", index_path, wm->type_name());
      Require(!wm->empty(), "{}: 'weight_map' is empty", index_path);
      std::set<std::string> names;
      for (auto& [tensor, shard] : wm->items()) {
        Require(shard.is_string(), "{}: weight_map['{}'] must be a shard file name, got {}",
                index_path, tensor, shard.dump());
        const std::string s = shard.get<std::string>();
        Require(SafeShardName(s), "{}: weight_map['{}'] = '{}' is not a file inside the directory",
                index_path, tensor, s);
        weight_map[tensor] = s;
        names.insert(s);
      }
      for (const std::string& s : names) {
        const std::string shard_path = Join(path, s);
        Require(fs::exists(shard_path, ec), "{}: shard '{}' (holding e.g. '{}') is missing: {}",
                index_path, s,
                std::find_if(weight_map.begin(), weight_map.end(),
                             [&](const auto& kv) { return kv.second == s; })->first,
                shard_path);
        ck.shards_.push_back(SafetensorsFile::Open(shard_path));
        shard_names.push_back(s);
      }
    }
  }

  for (size_t i = 0; i < ck.shards_.size(); ++i) {
    const SafetensorsFile& shard = ck.shards_[i];
    for (const TensorInfo& t : shard.tensors()) {
      if (ck.sharded_) {
        auto it = weight_map.find(t.name);
        Require(it != weight_map.end(), "{}: tensor '{}' is not listed in {}", shard.path(),
                t.name, index_path);
        Require(it->second == shard_names[i], "{}: tensor '{}' is in shard '{}' but the index "
                "places it in '{}'", index_path, t.name, shard_names[i], it->second);
      }
      Require(!ck.index_.count(t.name), "{}: tensor '{}' appears in more than one shard", path,
              t.name);
      ck.index_[t.name] = i;
      ck.tensors_.push_back(&t);
    }
  }
  for (const auto& [tensor, shard] : weight_map)
    Require(ck.index_.count(tensor), "{}: lists tensor '{}' in shard '{}', but that shard has no "
            "such tensor", index_path, tensor, shard);
  return ck;
}

const TensorInfo* HfCheckpoint::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : shards_[it->second].Find(name);
}

const TensorInfo& HfCheckpoint::Get(const std::string& name) const {
  const TensorInfo* t = Find(name);
  if (!t) Fail("{}: no tensor named '{}' ({} tensors)", path_, name, tensors_.size());
  return *t;
}

const std::string& HfCheckpoint::FileOf(const std::string& name) const {
  Get(name);
  return shards_[index_.at(name)].path();
}

std::vector<float> HfCheckpoint::ReadF32(const std::string& name) const {
  const TensorInfo& t = Get(name);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  ConvertToF32(t, out.data(), out.size(), FileOf(name));
  return out;
}

void HfCheckpoint::ReadF32Into(const std::string& name, float* dst, size_t n) const {
  ConvertToF32(Get(name), dst, n, FileOf(name));
}

// ---------------------------------------------------------------------------------------------
// Writing

HfCheckpointWriter::HfCheckpointWriter(uint64_t max_shard_bytes)
    : max_shard_bytes_(max_shard_bytes) {
  Require(max_shard_bytes > 0, "checkpoint writer: max shard size must be positive");
}

void HfCheckpointWriter::Add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                             const void* data, size_t nbytes) {
  validator_.Add(name, dtype, shape, data, nbytes);
  items_.push_back({name, dtype, std::move(shape), data, nbytes, false});
}

void HfCheckpointWriter::AddF32(const std::string& name, std::vector<int64_t> shape,
                                const float* data, DType stored) {
  validator_.AddF32(name, shape, data, stored);
  const size_t nbytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(stored);
  items_.push_back({name, stored, std::move(shape), data, nbytes, true});
}

void HfCheckpointWriter::SetMetadata(const std::string& key, const std::string& value) {
  validator_.SetMetadata(key, value);
  metadata_[key] = value;
}

std::vector<std::string> HfCheckpointWriter::Write(
    const std::string& dir, const std::function<void(uint64_t bytes)>& progress) const {
  std::error_code ec;
  fs::create_directories(dir, ec);
  Require(!ec, "{}: cannot create directory: {}", dir, ec.message());

  // Greedy packing in Add() order keeps each layer's tensors together and the order stable.
  std::vector<std::vector<size_t>> shards;
  uint64_t current = 0;
  for (size_t i = 0; i < items_.size(); ++i) {
    if (shards.empty() || (current > 0 && current + items_[i].nbytes > max_shard_bytes_)) {
      shards.emplace_back();
      current = 0;
    }
    shards.back().push_back(i);
    current += items_[i].nbytes;
  }
  if (shards.empty()) shards.emplace_back();  // an empty model still gets a (valid) file

  uint64_t bytes_written = 0;
  auto write_shard = [&](const std::vector<size_t>& members, const std::string& file) {
    SafetensorsWriter w;
    for (const auto& [k, v] : metadata_) w.SetMetadata(k, v);
    for (size_t i : members) {
      const Item& it = items_[i];
      if (it.from_f32)
        w.AddF32(it.name, it.shape, static_cast<const float*>(it.data), it.dtype);
      else
        w.Add(it.name, it.dtype, it.shape, it.data, it.nbytes);
    }
    w.Write(Join(dir, file));
    for (size_t i : members) bytes_written += items_[i].nbytes;
    if (progress) progress(bytes_written);
  };

  const std::string single = Join(dir, HfCheckpoint::kSingleFile);
  const std::string index_path = Join(dir, HfCheckpoint::kIndexFile);
  std::vector<std::string> written;
  if (shards.size() == 1) {
    write_shard(shards[0], HfCheckpoint::kSingleFile);
    written.push_back(HfCheckpoint::kSingleFile);
    fs::remove(index_path, ec);  // readers prefer model.safetensors anyway; drop the stale index
    return written;
  }

  json weight_map = json::object();
  uint64_t total = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
    write_shard(shards[s], file);
    written.push_back(file);
    for (size_t i : shards[s]) {
      weight_map[items_[i].name] = file;
      total += items_[i].nbytes;
    }
  }
  // A stale model.safetensors would win over the new index; remove it BEFORE the index appears,
  // so an interrupted write leaves "no model" (an error) rather than the old model.
  fs::remove(single, ec);
  Require(!ec, "{}: cannot remove stale file: {}", single, ec.message());
  json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
  WriteFileAtomic(index_path, index.dump(2) + "\n");
  written.push_back(HfCheckpoint::kIndexFile);

  // Shards of an earlier, differently split write are no longer referenced.
  static const std::regex kShardPattern(R"(model-\d{5}-of-\d{5}\.safetensors)");
  std::set<std::string> keep(written.begin(), written.end());
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, kShardPattern) && !keep.count(name)) fs::remove(entry.path(), ec);
  }
  return written;
}

}  // namespace replica
