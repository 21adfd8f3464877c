#include "eval/eval_gate.h"

#include <filesystem>
#include <map>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace replica::eval {
namespace {

// +1: higher is better, -1: lower is better, 0: not a quality metric.
int Direction(const std::string& metric) {
  if (metric == "ce_loss" || metric == "ppl" || metric == "bpb") return -1;
  if (metric == "acc" || metric == "len_norm_acc") return +1;
  return 0;
}

// step -> eval object; the last line for a step wins (a resumed run rewrites its tail).
std::map<int64_t, nlohmann::json> EvalLines(const std::vector<nlohmann::json>& lines) {
  std::map<int64_t, nlohmann::json> out;
  for (const auto& j : lines) {
    if (!j.is_object() || !j.contains("eval") || !j.contains("step")) continue;
    if (!j["step"].is_number_integer() || !j["eval"].is_object()) continue;
    out[j["step"].get<int64_t>()] = j["eval"];
  }
  return out;
}

std::vector<nlohmann::json> ReadJsonl(const std::string& path_or_dir) {
  std::string path = path_or_dir;
  if (std::filesystem::is_directory(path)) path += "/metrics.jsonl";
  const std::string text = ReadFile(path);
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  int64_t line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line;
    const std::string s = text.substr(pos, end - pos);
    pos = end + 1;
    if (s.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(ParseJson(s, fmt::format("{}:{}", path, line)));
  }
  return out;
}

}  // namespace

EvalGateResult CheckEvalGate(const std::vector<nlohmann::json>& reference_lines,
                             const std::vector<nlohmann::json>& candidate_lines,
                             const EvalGateOptions& options) {
  Require(options.tolerance >= 0, "eval gate: tolerance must be >= 0 (got {})", options.tolerance);
  const auto ref = EvalLines(reference_lines);
  const auto cand = EvalLines(candidate_lines);
  EvalGateResult r;
  for (const auto& [step, ce] : cand) {
    if (ce.contains("canary") && ce["canary"].is_object() && ce["canary"].value("alarm", false)) {
      r.canary_alarm_steps.push_back(step);
    }
    auto it = ref.find(step);
    if (it == ref.end()) continue;
    for (const auto& [set, cm] : ce.items()) {
      if (set == "canary" || !cm.is_object() || !it->second.contains(set)) continue;
      const nlohmann::json& rm = it->second[set];
      for (const auto& [metric, cv] : cm.items()) {
        const int dir = Direction(metric);
        if (dir == 0 || !cv.is_number() || !rm.contains(metric) || !rm[metric].is_number()) continue;
        const double c = cv.get<double>(), rv = rm[metric].get<double>();
        r.compared += 1;
        const double improvement = dir * (c - rv);
        if (improvement > options.tolerance) {
          r.suspicious.push_back({step, set, metric, rv, c, improvement});
        }
      }
    }
  }
  return r;
}

EvalGateResult CheckEvalGateFiles(const std::string& reference, const std::string& candidate,
                                  const EvalGateOptions& options) {
  return CheckEvalGate(ReadJsonl(reference), ReadJsonl(candidate), options);
}

nlohmann::json EvalGateResult::ToJson(double tolerance) const {
  nlohmann::json s = nlohmann::json::array();
  for (const auto& m : suspicious) {
    s.push_back({{"step", m.step}, {"set", m.set}, {"metric", m.metric}, {"reference", m.reference},
                 {"candidate", m.candidate}, {"improvement", m.improvement}});
  }
  return {{"pass", pass()}, {"compared", compared}, {"tolerance", tolerance},
          {"suspicious", s}, {"canary_alarm_steps", canary_alarm_steps}};
}

}  // namespace replica::eval
