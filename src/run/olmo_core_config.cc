// The importer's frame: reading one object through the field table, class dispatch, and the run
// from config.json to replica YAML (readers and decisions in the other olmo_core_*.cc files).
#include "run/olmo_core_config.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "run/olmo_core_import.h"

namespace replica {
namespace olmo_core {

std::string JoinPath(const std::string& a, const std::string& b) {
  return a.empty() ? b : a + "." + b;
}

std::string ShortClass(const std::string& cls) { return cls.substr(cls.rfind('.') + 1); }

const json* Obj::Take(const std::string& key) {
  const FieldRule* f = rule_.Field(key);
  Require(f && f->use == Use::kMapped,
          "internal error: the importer reads {}.{}, which the field table does not list as "
          "mapped",
          rule_.name, key);
  taken_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> Obj::Int(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
    im_.Refuse(At(key), fmt::format("{} is above 2^63 - 1, the largest integer replica holds",
                                    v->dump()));
    return std::nullopt;
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  im_.Refuse(At(key), fmt::format("expected an integer, got {}",
                                  v->is_number_float() ? v->dump() + " (a float)" : v->dump()));
  return std::nullopt;
}

std::optional<double> Obj::Num(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_number()) return v->get<double>();
  im_.Refuse(At(key), fmt::format("expected a number, got {}", v->dump()));
  return std::nullopt;
}

std::optional<bool> Obj::Bool(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>();
  im_.Refuse(At(key), fmt::format("expected true or false, got {}", v->dump()));
  return std::nullopt;
}

std::optional<std::string> Obj::Str(const std::string& key) {
  const json* v = Take(key);
  if (!v) return std::nullopt;
  if (v->is_string()) return v->get<std::string>();
  im_.Refuse(At(key), fmt::format("expected a string, got {}", v->dump()));
  return std::nullopt;
}

namespace {
// A value for a message: short values whole, long ones by their type.
std::string Shown(const json& v) {
  if (v.is_structured() && v.size() > 8) return fmt::format("(a {} of {} items)", v.type_name(), v.size());
  std::string s = v.dump();
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}
}  // namespace

void Obj::Finish() {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    const std::string& key = it.key();
    if (key == kClassKey || key == "type" || taken_.count(key)) continue;
    const FieldRule* f = rule_.Field(key);
    if (!f) {
      im_.Refuse(At(key), fmt::format("unknown field of {}; replica does not know what it "
                                      "changes, so it is refused rather than guessed",
                                      rule_.name));
      continue;
    }
    if (it->is_null()) continue;  // None: the field's default
    switch (f->use) {
      case Use::kMapped:  // not read in this context (the class's other fields decide that)
        im_.Refuse(At(key), fmt::format("{} is not used with the rest of this {} and is refused "
                                        "rather than dropped",
                                        Shown(*it), ShortClass(rule_.name)));
        break;
      case Use::kAccepted:
        if (f->at.empty()) {
          im_.Ignored(At(key), f->text);
        } else {
          bool ok = false;
          for (const json& a : f->at) ok = ok || *it == a;
          if (!ok)
            im_.Refuse(At(key), fmt::format("{} is not supported: {}", Shown(*it), f->otherwise));
        }
        break;
      case Use::kRefused:
        im_.Refuse(At(key), fmt::format("{} is not supported: {}", Shown(*it), f->text));
        break;
    }
  }
  for (const FieldRule& f : rule_.fields) {
    if (f.absent.is_null() || Has(f.name)) continue;
    bool ok = false;
    for (const json& a : f.at) ok = ok || f.absent == a;
    if (!ok)
      im_.Refuse(At(f.name), fmt::format("absent, so {} (OLMo-core's default), which is not "
                                         "supported: {}",
                                         f.absent.dump(), f.otherwise));
  }
}

const ClassRule* Importer::Dispatch(const json& j, const std::string& path, Role role) {
  if (!j.is_object() || !j.contains(kClassKey) || !j[kClassKey].is_string()) {
    Refuse(path, fmt::format("expected {} (a JSON object with \"_CLASS_\"), got {}", RoleName(role),
                             j.is_object() ? "an object without \"_CLASS_\"" : Shown(j)));
    return nullptr;
  }
  const std::string cls = j[kClassKey].get<std::string>();
  const ClassRule* rule = FindClass(cls);
  if (!rule) {
    Refuse(JoinPath(path, kClassKey),
           fmt::format("unknown class '{}' where {} is expected; replica maps only the OLMo-core "
                       "classes it knows (docs/olmo-core.md) and does not guess",
                       cls, RoleName(role)));
    return nullptr;
  }
  if (rule->role != role) {
    Refuse(JoinPath(path, kClassKey),
           fmt::format("'{}' is {}, not {}", cls, RoleName(rule->role), RoleName(role)));
    return nullptr;
  }
  if (auto t = j.find("type"); t != j.end()) {
    if (rule->type.empty()) {
      Refuse(JoinPath(path, "type"),
             fmt::format("{}: {} has no registered name (OLMo-core writes \"type\" only for "
                         "registrable classes)",
                         Shown(*t), ShortClass(cls)));
    } else if (*t != rule->type) {
      Refuse(JoinPath(path, "type"), fmt::format("{}: the registered name of {} is \"{}\"",
                                                 Shown(*t), ShortClass(cls), rule->type));
    }
  }
  switch (rule->whole) {
    case Whole::kRefused:
      Refuse(path, fmt::format("{}: {}", ShortClass(cls), rule->reason));
      return nullptr;
    case Whole::kAccepted:
      Ignored(path, fmt::format("{}: {}", ShortClass(cls), rule->reason));
      return nullptr;
    case Whole::kRefusedButRead:
      Refuse(path, fmt::format("{}: {}", ShortClass(cls), rule->reason));
      return rule;
    case Whole::kFields:
      return rule;
  }
  return nullptr;
}

OlmoCoreImport Importer::Run(const json& root) {
  for (const std::string& m : opt_.path_map)
    Require(m.find('=') != std::string::npos && m.find('=') > 0,
            "--path-map '{}': expected PREFIX=LOCAL_DIR", m);
  Experiment(root, "");
  const std::vector<Line> lines = Decide();  // every refusal is recorded by now
  for (const Line& l : lines) out_.sources[l.key] = l.from;
  out_.yaml = RenderYaml(lines, out_, source_);
  out_.data_paths = r_.data_resolved ? r_.data_paths : std::vector<std::string>{};
  out_.seq_len = r_.seq_len.value;
  out_.dtype = r_.dtype.set
                   ? r_.dtype.value
                   : (r_.tok_vocab.set && r_.tok_vocab.value > 65536 ? "uint32" : "uint16");
  out_.seed = static_cast<uint64_t>(std::max<int64_t>(0, r_.data_seed.value));
  out_.source_permutation_seed = r_.source_permutation_seed.value;
  if (r_.seq_len.value > 0 && r_.global_batch_tokens.value % r_.seq_len.value == 0)
    out_.global_batch_instances =
        static_cast<uint64_t>(r_.global_batch_tokens.value / r_.seq_len.value);
  out_.tokenizer_vocab_size = static_cast<uint64_t>(std::max<int64_t>(0, r_.tok_vocab.value));
  out_.eos_token_id = r_.eos_id.set ? r_.eos_id.value : -1;
  out_.pad_token_id = r_.pad_id.set ? r_.pad_id.value : -1;
  out_.bos_token_id = r_.bos_id.set ? r_.bos_id.value : -1;
  out_.max_target_sequence_length = r_.max_target_seq_len.set ? r_.max_target_seq_len.value : -1;
  if (r_.packing.set) out_.packing = r_.packing.value;
  if (r_.long_doc_strategy.set) out_.long_doc_strategy = r_.long_doc_strategy.value;
  if (r_.source_group_size.set) out_.source_group_size = r_.source_group_size.value;
  if (r_.generate_doc_lengths.set) out_.generate_doc_lengths = r_.generate_doc_lengths.value;
  return out_;
}

}  // namespace olmo_core

bool IsOlmoCoreConfig(const nlohmann::json& j) {
  return j.is_object() && j.contains(olmo_core::kClassKey);
}

OlmoCoreImport ImportOlmoCoreConfig(const nlohmann::json& j, const std::string& source,
                                    const OlmoCoreImportOptions& options) {
  olmo_core::Importer im(options, source);
  return im.Run(j);
}

std::string NotesText(const std::vector<ImportNote>& notes) {
  std::string s;
  for (const ImportNote& n : notes) s += fmt::format("\n  {}: {}", n.json_path, n.reason);
  return s;
}

void RequireNoRefusals(const OlmoCoreImport& imported, const std::string& source) {
  Require(imported.refused.empty(),
          "{}: {} OLMo-core setting(s) replica cannot reproduce (JSON path: reason):{}", source,
          imported.refused.size(), NotesText(imported.refused));
}

}  // namespace replica
