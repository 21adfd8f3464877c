#include "run/model_shape.h"

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "run/olmo_core_config.h"
#include "run/run_config.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

constexpr const char* kExpected =
    "expected a Hugging Face config.json, a run config (YAML with a model section, or an "
    "OLMo-core config.json), or a directory holding config.json (HF model, checkpoint step-N) or "
    "config.yaml (run directory)";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

ModelConfig FromRunConfig(const std::string& path) {
  return LoadRunConfig(path, {}, OlmoCoreImportOptions{}).model;
}

}  // namespace

ModelConfig LoadModelShape(const std::string& path, const std::string& what) {
  std::error_code ec;
  Require(fs::exists(path, ec), "{} {}: no such file or directory ({})", what, path, kExpected);
  if (fs::is_directory(path, ec)) {
    const fs::path dir(path);
    if (fs::exists(dir / "config.json", ec)) return ModelConfig::FromHfFile((dir / "config.json").string());
    if (fs::exists(dir / "config.yaml", ec)) return FromRunConfig((dir / "config.yaml").string());
    Fail("{} {}: a directory with neither config.json nor config.yaml ({})", what, path, kExpected);
  }
  if (EndsWith(path, ".yaml") || EndsWith(path, ".yml")) return FromRunConfig(path);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(path), nullptr, false);
  Require(!j.is_discarded() && j.is_object(), "{} {}: neither YAML (by its name) nor a JSON object ({})",
          what, path, kExpected);
  if (IsOlmoCoreConfig(j)) return FromRunConfig(path);
  Require(j.contains("model_type"),
          "{} {}: a JSON object that is neither a Hugging Face config.json (no model_type) nor an "
          "OLMo-core config.json (no _CLASS_) ({})",
          what, path, kExpected);
  return ModelConfig::FromHfJson(j, path);
}

}  // namespace replica
