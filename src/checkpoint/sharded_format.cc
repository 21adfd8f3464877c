#include "checkpoint/sharded_format.h"

#include "core/error.h"

namespace replica {

const char* ShardTensorName(ShardField field) {
  switch (field) {
    case ShardField::kParams: return "params";
    case ShardField::kAdamM: return "adam_m";
    case ShardField::kAdamV: return "adam_v";
  }
  return "?";
}

std::string ShardFileName(int rank, int world) {
  return fmt::format("shard-{:05d}-of-{:05d}.safetensors", rank, world);
}

nlohmann::json LayoutJson(const ParamLayout& layout) {
  nlohmann::json out = nlohmann::json::array();
  for (const ParamView& v : layout.views()) out.push_back({v.name, v.offset, v.shape});
  return out;
}

nlohmann::json ShardedSection(const ShardedManifest& m) {
  nlohmann::json shards = nlohmann::json::array();
  for (const ShardEntry& s : m.shards)
    shards.push_back({{"file", s.file}, {"rank", s.rank}, {"begin", s.begin}, {"end", s.end}});
  return {{"world", m.world},         {"total_floats", m.total_floats}, {"adam_step", m.adam_step},
          {"shards", shards},         {"layout", m.layout}};
}

namespace {

uint64_t Unsigned(const nlohmann::json& obj, const char* key, const std::string& where) {
  Require(obj.is_object() && obj.contains(key) && obj[key].is_number_integer() &&
              (obj[key].is_number_unsigned() || obj[key].get<int64_t>() >= 0),
          "{}: field '{}' must be a non-negative integer", where, key);
  return obj[key].get<uint64_t>();
}

}  // namespace

ShardedManifest ParseShardedManifest(const nlohmann::json& manifest,
                                     const std::string& manifest_path) {
  Require(manifest.contains("sharded") && manifest["sharded"].is_object(),
          "{}: version {} needs an object 'sharded'", manifest_path, kShardedFormatVersion);
  const nlohmann::json& s = manifest["sharded"];
  const std::string where = manifest_path + ": sharded";
  ShardedManifest m;
  const uint64_t world = Unsigned(s, "world", where);
  Require(world >= 1 && world <= (1u << 20), "{}: field 'world' is {}, expected 1 or more", where,
          world);
  m.world = static_cast<int>(world);
  m.total_floats = Unsigned(s, "total_floats", where);
  m.adam_step = static_cast<int64_t>(Unsigned(s, "adam_step", where));
  Require(s.contains("layout") && s["layout"].is_array(), "{}: field 'layout' must be an array",
          where);
  m.layout = s["layout"];
  Require(s.contains("shards") && s["shards"].is_array(), "{}: field 'shards' must be an array",
          where);
  const nlohmann::json& shards = s["shards"];
  Require(shards.size() == world, "{}: 'shards' lists {} files, 'world' is {}", where,
          shards.size(), world);
  const nlohmann::json& files = manifest["files"];
  size_t covered = 0;
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string at = fmt::format("{}.shards[{}]", where, i);
    const nlohmann::json& e = shards[i];
    Require(e.is_object() && e.contains("file") && e["file"].is_string(),
            "{}: field 'file' must be a string", at);
    ShardEntry entry;
    entry.file = e["file"].get<std::string>();
    entry.rank = static_cast<int>(Unsigned(e, "rank", at));
    entry.begin = Unsigned(e, "begin", at);
    entry.end = Unsigned(e, "end", at);
    Require(entry.rank == static_cast<int>(i), "{}: rank {} listed in position {} (rank order)",
            at, entry.rank, i);
    Require(files.is_object() && files.contains(entry.file),
            "{}: shard file {} is not listed in 'files'", at, entry.file);
    Require(entry.begin <= entry.end, "{}: range [{}, {}) is reversed", at, entry.begin,
            entry.end);
    Require(entry.begin == covered,
            "{}: the shard ranges do not cover the layout: {} ({}) starts at float {}, the "
            "previous shard ends at {}",
            where, entry.file, at, entry.begin, covered);
    covered = entry.end;
    m.shards.push_back(std::move(entry));
  }
  Require(covered == m.total_floats,
          "{}: the shard ranges do not cover the layout: they end at float {}, 'total_floats' "
          "is {}",
          where, covered, m.total_floats);
  return m;
}

void RequireSameLayout(const nlohmann::json& recorded, const ParamLayout& layout,
                       const std::string& where) {
  const auto& views = layout.views();
  for (size_t i = 0; i < views.size(); ++i) {
    const ParamView& v = views[i];
    Require(i < recorded.size(),
            "{}: the checkpoint has {} tensors, the model has {} (from '{}' on): the checkpoint "
            "is for a different model",
            where, recorded.size(), views.size(), v.name);
    const nlohmann::json& r = recorded[i];
    const bool same = r.is_array() && r.size() == 3 && r[0].is_string() &&
                      r[0].get<std::string>() == v.name && r[1].is_number_integer() &&
                      r[1].get<int64_t>() == static_cast<int64_t>(v.offset) && r[2].is_array() &&
                      r[2] == nlohmann::json(v.shape);
    Require(same,
            "{}: tensor {} is {} in the checkpoint, the model has '{}' {} at float {}: the "
            "checkpoint is for a different model",
            where, i, r.dump(), v.name, ShapeString(v.shape), v.offset);
  }
  Require(recorded.size() == views.size(),
          "{}: the checkpoint has {} tensors, the model has {} (extra: {}): the checkpoint is for "
          "a different model",
          where, recorded.size(), views.size(),
          recorded.size() > views.size() ? recorded[views.size()].dump() : std::string());
}

}  // namespace replica
