#include "run/metrics_reader.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/atomic_file.h"
#include "core/error.h"
#include "run/metrics_writer.h"
#include "run/reference_metrics.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

void Flatten(const nlohmann::json& value, const std::string& name,
             std::map<std::string, nlohmann::json>* out, const std::string& where, int64_t step) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [k, v] : value.items()) Flatten(v, name + "." + k, out, where, step);
    return;
  }
  Require(out->emplace(name, value).second,
          "{}: '{}' appears twice for step {} (two trajectories in one file?)", where, name, step);
}

}  // namespace

std::optional<double> MetricsLog::AsNumber(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

MetricsLog ReadMetrics(const std::string& path) {
  std::error_code ec;
  MetricsLog log;
  if (fs::is_directory(path, ec)) {
    log.path = (fs::path(path) / kMetricsFile).string();
    if (!fs::exists(log.path, ec)) {
      if (auto reference = ReadReferenceMetrics(path)) return std::move(*reference);
      Fail("{}: run directory has no {} (nor OLMo-core metrics_step<N>.json files)", path,
           kMetricsFile);
    }
  } else {
    Require(fs::exists(path, ec), "{}: no such run directory or metrics file", path);
    if (auto reference = ReadReferenceMetrics(path)) return std::move(*reference);
    log.path = path;
  }
  const std::string text = ReadFile(log.path);
  const size_t first = text.find_first_not_of(" \t\r\n");
  Require(first == std::string::npos || text[first] == '{',
          "{}: not a metrics file replica reads: expected a replica metrics.jsonl or JSONL of "
          "step and loss, an OLMo-core console log or metrics_step<N>.json, or a W&B CSV export "
          "(docs/metrics.md)",
          log.path);
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", log.path, line_no);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    Require(!j.is_discarded(), "{}: malformed JSON", where);
    Require(j.is_object(), "{}: expected a JSON object", where);
    // W&B's history rows name the step "_step".
    const char* step_key = !j.contains("step") && j.contains("_step") ? "_step" : "step";
    Require(j.contains(step_key) && j[step_key].is_number_integer() &&
                j[step_key].get<int64_t>() >= 0,
            "{}: expected a non-negative integer \"step\"", where);
    const int64_t step = j[step_key].get<int64_t>();
    auto& row = log.steps[step];
    const bool is_eval = j.contains("eval");
    for (const auto& [k, v] : j.items()) {
      if (k == step_key || (k.size() > 1 && k[0] == '_')) continue;  // _runtime, _timestamp
      Flatten(v, is_eval && k != "eval" ? "eval." + k : k, &row, where, step);
    }
  }
  Require(!log.steps.empty(), "{}: no metrics lines", log.path);
  MapReferenceNames(log);
  return log;
}

}  // namespace replica
