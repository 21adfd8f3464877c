// The run-config format dispatch: a file is an OLMo-core config.json when it is a JSON object
// with "_CLASS_" (after an optional UTF-8 byte order mark), replica YAML otherwise.
#include <cstdio>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "run/olmo_core_config.h"

namespace replica {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr size_t kMaxJsonDepth = 64;  // OLMo-core's configs nest about 8 levels

// The first byte offset where `text` nests objects and arrays deeper than `max`, or npos. Strings
// are skipped (with their escapes), so brackets inside them do not count.
size_t TooDeepAt(const std::string& text, size_t max) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max) return i;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

// The JSON path a replica key came from, when `message` names a replica config key the import
// wrote ("config key 'model.hidden_size'").
std::string JsonPathOf(const std::string& message, const OlmoCoreImport& im) {
  const std::string tag = "config key '";
  const size_t a = message.find(tag);
  if (a == std::string::npos) return "";
  const size_t b = message.find('\'', a + tag.size());
  if (b == std::string::npos) return "";
  auto it = im.sources.find(message.substr(a + tag.size(), b - a - tag.size()));
  return it == im.sources.end() ? "" : it->second;
}

}  // namespace

json ReadOlmoCoreConfig(const std::string& path) {
  std::string text = ReadFile(path);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 byte order mark
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return nullptr;
  if (const size_t at = TooDeepAt(text, kMaxJsonDepth); at != std::string::npos)
    Fail("{}: JSON nested deeper than {} levels (at byte {}); an OLMo-core config nests about 8",
         path, kMaxJsonDepth, at);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& ex) {
    Fail("{}: not valid JSON: {}", path, ex.what());
  }
  return IsOlmoCoreConfig(j) ? j : json(nullptr);
}

RunConfig RunConfigFromImport(const OlmoCoreImport& im, const std::string& path,
                              const std::vector<std::string>& overrides) {
  try {
    return RunConfig::FromYaml(im.yaml, fs::current_path().string(), overrides, path);
  } catch (const Error& e) {
    const std::string from = JsonPathOf(e.what(), im);
    if (from.empty() && im.refused.empty()) throw;
    std::string message = e.what();
    if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
    Fail("{}: {}{}{}", path, from.empty() ? "" : from + ": ", message,
         im.refused.empty() ? ""
                            : fmt::format(" (with {} refused setting(s) left out)",
                                          im.refused.size()));
  }
}

RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides,
                        const OlmoCoreImportOptions& options) {
  const json j = ReadOlmoCoreConfig(path);
  if (j.is_null()) return RunConfig::Load(path, overrides);
  const OlmoCoreImport im = ImportOlmoCoreConfig(j, path, options);
  if (options.allow_unsupported) {
    for (const ImportNote& n : im.refused)
      std::fprintf(stderr, "replica: warning: %s: %s: NOT reproduced: %s\n", path.c_str(),
                   n.json_path.c_str(), n.reason.c_str());
  } else {
    RequireNoRefusals(im, path);
  }
  if (im.needs_max_steps) {
    bool given = false;
    for (const std::string& o : overrides) given = given || o.rfind("train.max_steps=", 0) == 0;
    Require(given,
            "{}: the run stops after a number of epochs but the dataset is not available "
            "to count its batches: map the data (--mix-dir, --data-paths, --path-map) or "
            "give --set train.max_steps=N",
            path);
  }
  if (options.for_training) {
    auto overridden = [&](const std::string& key) {
      for (const std::string& o : overrides)
        if (o.rfind(key + "=", 0) == 0) return true;
      return false;
    };
    std::vector<ImportNote> missing;
    for (const ImportNote& n : im.unresolved)
      if (!overridden(n.replica_key)) missing.push_back(n);
    Require(missing.empty(), "{}: before this OLMo-core config can train here:{}", path,
            NotesText(missing));
  }
  return RunConfigFromImport(im, path, overrides);
}

}  // namespace replica
