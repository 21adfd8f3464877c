#include "run/reference_metrics.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string_view>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> Lines(const std::string& text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.emplace_back(text.data() + pos, nl - pos);
    pos = nl + 1;
  }
  return lines;
}

// A metric value as JSON: a number, or replica's spelling of NaN / ±Inf (metrics_writer.h).
nlohmann::json NumberJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

// The whole of `s` as a number: decimal or exponent notation, nan, inf, -inf, NaN, Infinity.
std::optional<double> ParsePlainNumber(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  if (s == "nan" || s == "NaN" || s == "-nan") return std::nan("");
  if (s == "inf" || s == "Infinity" || s == "+inf") return INFINITY;
  if (s == "-inf" || s == "-Infinity") return -INFINITY;
  const std::string str(s);
  char* end = nullptr;
  const double v = std::strtod(str.c_str(), &end);
  if (end != str.c_str() + str.size()) return std::nullopt;
  return v;
}

// olmo_core.utils.format_float's output: "1,234", "1.234B" (T, P, E), "2.50E-05", "0.0", "nan".
std::optional<double> ParseFormatFloat(std::string_view s) {
  s = Trim(s);
  std::string digits;
  for (char c : s)
    if (c != ',') digits += c;
  double scale = 1;
  if (digits.size() >= 2 && std::isdigit(static_cast<unsigned char>(digits[digits.size() - 2]))) {
    switch (digits.back()) {
      case 'B': scale = 1e9; break;
      case 'T': scale = 1e12; break;
      case 'P': scale = 1e15; break;
      case 'E': scale = 1e18; break;
      default: break;
    }
    if (scale != 1) digits.pop_back();
  }
  auto v = ParsePlainNumber(digits);
  if (v) *v *= scale;
  return v;
}

void Put(MetricsLog& log, int64_t step, const std::string& name, double value) {
  log.steps[step][name] = NumberJson(value);
}

// ---- OLMo-core console log ----

// "[step=12/100,epoch=1,eta=3m2s]" anywhere in the line (the logging prefix varies): the step.
std::optional<int64_t> StepMarker(std::string_view line) {
  const size_t at = line.find("[step=");
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + 6;
  int64_t step = 0;
  const size_t digits_start = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) {
    if (step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (line[i] - '0');
    ++i;
  }
  if (i == digits_start || i >= line.size() || line[i] != '/') return std::nullopt;
  const size_t close = line.find(']', i);
  if (close == std::string_view::npos || line.substr(i, close - i).find(",epoch=") == std::string_view::npos)
    return std::nullopt;
  return step;
}

MetricsLog ReadConsoleLog(const std::string& path, const std::string& text) {
  MetricsLog log;
  log.path = path;
  log.format = "OLMo-core console log";
  const std::vector<std::string_view> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto step = StepMarker(lines[i]);
    if (!step) continue;
    // A later block for the same step (a restarted run) replaces the earlier one.
    std::map<std::string, nlohmann::json> row;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const std::string_view l = lines[j];
      if (l.empty() || (l[0] != ' ' && l[0] != '\t')) break;
      const size_t eq = l.rfind('=');
      if (eq == std::string_view::npos) break;
      const std::string name(Trim(l.substr(0, eq)));
      const auto v = ParseFormatFloat(l.substr(eq + 1));
      if (name.empty() || !v) break;
      row[name] = NumberJson(*v);
    }
    if (!row.empty()) log.steps[*step] = std::move(row);
    i = j - 1;
  }
  Require(!log.steps.empty(),
          "{}: an OLMo-core console log with no metrics: no '[step=N/M,epoch=E]' line followed "
          "by '    name=value' lines (ConsoleLoggerCallback's format)",
          path);
  return log;
}

// ---- OLMo-core MetricSaverCallback files ----

std::optional<int64_t> MetricSaverStep(const std::string& filename) {
  const std::string prefix = "metrics_step", suffix = ".json";
  if (filename.size() <= prefix.size() + suffix.size() || filename.rfind(prefix, 0) != 0 ||
      filename.compare(filename.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  const std::string digits =
      filename.substr(prefix.size(), filename.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(digits);
}

void ReadMetricSaverFile(const std::string& file, int64_t step, MetricsLog& log) {
  const nlohmann::json j = nlohmann::json::parse(ReadFile(file), nullptr, false);
  Require(!j.is_discarded() && j.is_object(),
          "{}: expected one JSON object of metrics (OLMo-core MetricSaverCallback)", file);
  for (const auto& [name, v] : j.items()) {
    if (v.is_number()) Put(log, step, name, v.get<double>());
    else if (v.is_string() && ParsePlainNumber(v.get<std::string>()))
      Put(log, step, name, *ParsePlainNumber(v.get<std::string>()));
  }
}

MetricsLog ReadMetricSaverDir(const std::string& dir) {
  MetricsLog log;
  log.path = dir;
  log.format = "OLMo-core metrics_step<N>.json files";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto step = MetricSaverStep(entry.path().filename().string());
    if (step && entry.is_regular_file(ec)) ReadMetricSaverFile(entry.path().string(), *step, log);
  }
  return log;
}

// ---- W&B CSV export ----

// One CSV record (RFC 4180: quoted fields, "" inside quotes); `pos` moves past it.
std::vector<std::string> CsvRecord(const std::string& text, size_t& pos, const std::string& where) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  while (pos < text.size()) {
    const char c = text[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < text.size() && text[pos] == '"') {
          fields.back() += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  Require(!quoted, "{}: a quoted field is not closed", where);
  return fields;
}

MetricsLog ReadWandbCsv(const std::string& path, const std::string& text) {
  MetricsLog log;
  log.path = path;
  log.format = "W&B CSV export";
  size_t pos = 0;
  const std::vector<std::string> header = CsvRecord(text, pos, path + ":1");
  int step_col = -1;
  std::vector<std::string> names(header.size());
  std::map<std::string, std::string> column_of;  // metric -> the header it came from
  for (size_t c = 0; c < header.size(); ++c) {
    const std::string h(Trim(header[c]));
    if (h == "Step" || h == "_step") {
      if (step_col < 0 || h == "Step") step_col = static_cast<int>(c);
      continue;
    }
    if (h.empty() || h[0] == '_') continue;  // _runtime, _timestamp, ...
    if (h.size() > 5 && (h.compare(h.size() - 5, 5, "__MIN") == 0 ||
                         h.compare(h.size() - 5, 5, "__MAX") == 0))
      continue;
    const size_t dash = h.rfind(" - ");
    std::string name = ReplicaMetricName(dash == std::string::npos ? h : h.substr(dash + 3));
    auto [it, fresh] = column_of.emplace(name, h);
    Require(fresh,
            "{}: columns '{}' and '{}' are both metric '{}' (a chart export of several runs? "
            "export one run per file)",
            path, it->second, h, name);
    names[c] = name;
  }
  Require(step_col >= 0, "{}: a CSV without a 'Step' or '_step' column (W&B's exports have one)",
          path);
  int64_t line_no = 1;
  while (pos < text.size()) {
    ++line_no;
    const std::string where = fmt::format("{}:{}", path, line_no);
    const std::vector<std::string> row = CsvRecord(text, pos, where);
    if (row.size() == 1 && Trim(row[0]).empty()) continue;
    Require(row.size() == header.size(), "{}: {} fields, the header has {}", where, row.size(),
            header.size());
    const auto step = ParsePlainNumber(row[step_col]);
    Require(step && *step >= 0 && *step == std::floor(*step) && *step < 9.2e18,
            "{}: step '{}' is not a non-negative integer", where, row[step_col]);
    const int64_t s = static_cast<int64_t>(*step);
    Require(!log.steps.count(s), "{}: step {} appears twice", where, s);
    auto& out = log.steps[s];
    for (size_t c = 0; c < row.size(); ++c) {
      if (names[c].empty() || Trim(row[c]).empty()) continue;
      const auto v = ParsePlainNumber(row[c]);
      Require(v.has_value(), "{}: column '{}': '{}' is not a number", where, header[c], row[c]);
      out[names[c]] = NumberJson(*v);
    }
  }
  Require(!log.steps.empty(), "{}: a CSV with a header and no rows", path);
  return log;
}

bool IsCsvHeader(std::string_view first_line) {
  if (first_line.find(',') == std::string_view::npos) return false;
  size_t pos = 0;
  const std::string line(first_line);
  for (const std::string& f : CsvRecord(line, pos, "header")) {
    const std::string_view h = Trim(f);
    if (h == "Step" || h == "_step") return true;
  }
  return false;
}

}  // namespace

std::string ReplicaMetricName(const std::string& name) {
  static const std::map<std::string, std::string> kNames = {
      {"train/CE loss", "ce_loss"},
      {"train/Z loss", "z_loss"},
      {"optim/total grad norm", "grad_norm"},
      {"optim/LR (group 0)", "lr"},
      {"optim/step skipped", "skipped"},
      {"throughput/total tokens", "tokens"},
  };
  auto it = kNames.find(name);
  return it == kNames.end() ? name : it->second;
}

void MapReferenceNames(MetricsLog& log) {
  for (auto& [step, row] : log.steps) {
    std::map<std::string, nlohmann::json> mapped;
    for (auto& [name, value] : row) {
      const std::string to = ReplicaMetricName(name);
      if (to == "skipped" && value.is_number()) value = value.get<double>() != 0;
      mapped[to] = std::move(value);
    }
    auto ce = mapped.find("ce_loss");
    if (!mapped.count("loss") && ce != mapped.end()) {
      const auto c = MetricsLog::AsNumber(ce->second);
      auto z_it = mapped.find("z_loss");
      const auto z = z_it == mapped.end() ? std::optional<double>(0.0)
                                          : MetricsLog::AsNumber(z_it->second);
      if (c && z) mapped["loss"] = NumberJson(*c + *z);
    }
    row = std::move(mapped);
  }
}

std::optional<MetricsLog> ReadReferenceMetrics(const std::string& path) {
  std::error_code ec;
  std::optional<MetricsLog> log;
  if (fs::is_directory(path, ec)) {
    bool any = false;
    for (const auto& entry : fs::directory_iterator(path, ec))
      any = any || MetricSaverStep(entry.path().filename().string()).has_value();
    if (!any) return std::nullopt;
    log = ReadMetricSaverDir(path);
  } else {
    const std::string name = fs::path(path).filename().string();
    if (const auto step = MetricSaverStep(name)) {
      log.emplace();
      log->path = path;
      log->format = "OLMo-core metrics_step<N>.json";
      ReadMetricSaverFile(path, *step, *log);
    } else {
      const std::string text = ReadFile(path);
      const std::string first_line = text.substr(0, text.find('\n'));
      const std::string_view first = Trim(first_line);
      const bool csv_name = name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0;
      if (first.empty() && !csv_name) return std::nullopt;
      if (!first.empty() && first[0] == '{') {
        // JSONL (ReadMetrics). OLMo-core's final metrics.json names no step: say what to give.
        Require(name != "metrics.json",
                "{}: OLMo-core's final metrics.json does not record its step; give the "
                "metrics_step<N>.json files (MetricSaverCallback save_interval) or the console "
                "log",
                path);
        return std::nullopt;
      }
      if (csv_name || IsCsvHeader(first)) {
        log = ReadWandbCsv(path, text);
      } else if (text.find("[step=") != std::string::npos) {
        log = ReadConsoleLog(path, text);
      } else {
        return std::nullopt;
      }
    }
  }
  Require(!log->steps.empty(), "{}: no metrics", path);
  MapReferenceNames(*log);
  return log;
}

}  // namespace replica
