// Reading RUN/metrics.jsonl (format: metrics_writer.h) into one flat table per run, for
// `replica compare` and `replica plot`.
//
// Every line is flattened to dotted names: a train line's keys as they are ("loss",
// "grad_norm"; nested objects as "a.b"); an eval line's "eval" object as "eval.<set>.<metric>" and
// its other keys as "eval.<key>", so eval values never collide with train values of the same step.
// Lines of the same step merge; the same name twice at one step is an Error (a file that holds two
// trajectories). Malformed input is an Error naming file:line.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace replica {

struct MetricsLog {
  std::string path;  // the metrics.jsonl read
  std::string format = "replica metrics.jsonl";  // or a reference run's (reference_metrics.h)
  std::map<int64_t, std::map<std::string, nlohmann::json>> steps;  // step -> name -> value

  // Numeric value (numbers, and the strings "NaN"/"Infinity"/"-Infinity"); nullopt otherwise.
  static std::optional<double> AsNumber(const nlohmann::json& v);
};

// `path` is a run directory (reads path/metrics.jsonl) or a .jsonl file, or a reference run's
// curve in one of the formats of run/reference_metrics.h (a JSONL line may give "_step" for
// "step" and OLMo-core's metric names, mapped to replica's). Error when missing, malformed
// (file:line), empty, or of no format replica reads.
MetricsLog ReadMetrics(const std::string& path);

}  // namespace replica
