// The run-config format dispatch: a file is an OLMo-core config.json when it is a JSON object
// with "_CLASS_" (after an optional UTF-8 byte order mark), replica YAML otherwise.
#include <cstdio>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/text_encoding.h"
#include "run/olmo_core_config.h"

namespace replica {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr size_t kMaxJsonDepth = 64;  // OLMo-core's configs nest about 8 levels

// Where `text` nests objects and arrays deeper than `max`: the JSON path of the value that does
// (its first levels), or "" when it does not. Strings are skipped with their escapes, so brackets
// inside them do not count; the text is not otherwise checked here (the parser does that).
std::string TooDeep(const std::string& text, size_t max) {
  struct Level {
    bool object;
    std::string key;  // object: the last key; array: the index of the current element
    size_t index = 0;
  };
  std::vector<Level> stack;
  std::string last_string;
  bool in_string = false;
  size_t string_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        last_string = text.substr(string_start, i - string_start);
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      string_start = i + 1;
    } else if (c == ':' && !stack.empty() && stack.back().object) {
      stack.back().key = last_string;
    } else if (c == ',' && !stack.empty() && !stack.back().object) {
      stack.back().key = std::to_string(++stack.back().index);
    } else if (c == '{' || c == '[') {
      if (stack.size() >= max) {
        std::string path;
        for (size_t l = 0; l < stack.size() && l < 6; ++l)
          path += stack[l].object ? (path.empty() ? "" : ".") + stack[l].key
                                  : "[" + stack[l].key + "]";
        return (path.empty() ? std::string("(top level)") : path) + "...";
      }
      stack.push_back({c == '{', c == '{' ? "" : "0"});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    }
  }
  return "";
}

// The JSON path a replica key came from, when `message` names a replica config key the import
// wrote ("config key 'model.hidden_size'", or "config section 'model': field 'hidden_size'").
std::string JsonPathOf(const std::string& message, const OlmoCoreImport& im) {
  auto quoted_after = [&](const std::string& tag) -> std::string {
    const size_t a = message.find(tag);
    if (a == std::string::npos) return "";
    const size_t b = message.find('\'', a + tag.size());
    return b == std::string::npos ? "" : message.substr(a + tag.size(), b - a - tag.size());
  };
  std::string key = quoted_after("config key '");
  if (key.empty()) {
    const std::string section = quoted_after("config section '");
    const std::string field = quoted_after("field '");
    if (!section.empty() && !field.empty()) key = section + "." + field;
  }
  auto it = im.sources.find(key);
  return key.empty() || it == im.sources.end() ? "" : it->second;
}

}  // namespace

json ReadOlmoCoreConfig(const std::string& path) {
  std::string text = ReadFile(path);
  RequireUtf8Text(text, path, "config files");
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // UTF-8 byte order mark
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return nullptr;
  if (const std::string at = TooDeep(text, kMaxJsonDepth); !at.empty())
    Fail("{}: {}: JSON nested deeper than {} levels; an OLMo-core config nests about 8", path, at,
         kMaxJsonDepth);
  const json j = ParseJson(text, path);
  return IsOlmoCoreConfig(j) ? j : json(nullptr);
}

RunConfig RunConfigFromImport(const OlmoCoreImport& im, const std::string& path,
                              const std::vector<std::string>& overrides) {
  try {
    return RunConfig::FromYaml(im.yaml, fs::current_path().string(), overrides, path);
  } catch (const Error& e) {
    const std::string from = JsonPathOf(e.what(), im);
    std::string message = e.what();
    if (message.rfind(path + ": ", 0) == 0) message.erase(0, path.size() + 2);
    Fail("{}: {}{}{}", path, from.empty() ? "" : from + ": ", message,
         im.refused.empty() ? ""
                            : fmt::format(" (with {} refused setting(s) left out)",
                                          im.refused.size()));
  }
}

RunConfig LoadRunConfig(const std::string& path, const std::vector<std::string>& overrides,
                        const OlmoCoreImportOptions& options, std::vector<std::string>* notices) {
  const json j = ReadOlmoCoreConfig(path);
  if (j.is_null()) return RunConfig::Load(path, overrides);
  const OlmoCoreImport im = ImportOlmoCoreConfig(j, path, options);
  if (options.allow_unsupported) {
    if (options.for_training) {
      std::vector<ImportNote> blocking;
      for (const ImportNote& n : im.refused)
        if (n.substitute.empty()) blocking.push_back(n);
      Require(blocking.empty(),
              "{}: --allow-unsupported trains past a refused setting only where replica computes "
              "something in its place; {} setting(s) have nothing that could stand in:{}",
              path, blocking.size(), NotesText(blocking));
    }
    for (const ImportNote& n : im.refused) {
      const std::string line = fmt::format(
          "{}: NOT reproduced: {}{}", n.json_path, n.reason,
          n.substitute.empty() ? "" : fmt::format("; in its place: {}", n.substitute));
      std::fprintf(stderr, "replica: warning: %s: %s\n", path.c_str(), line.c_str());
      if (notices) notices->push_back(line);
    }
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
  // Validated first, so that a value replica refuses is named before what is still to be mapped.
  RunConfig config = RunConfigFromImport(im, path, overrides);
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
  return config;
}

}  // namespace replica
