// RUN/metrics.jsonl (docs/design.md §4): one JSON object per line, each with an integer "step".
//   train line: {"step", "loss", "ce_loss", "z_loss", "grad_norm", "lr", "tokens", "step_time_s",
//                "tokens_per_s", "mfu", "skipped", ...}
//   eval line:  {"step", "eval": {set name: {metric: value}}, ...}
//
// Promises:
//  - After a resume the file describes ONE trajectory: opening with resume_step = S first rewrites
//    the file atomically keeping only the lines with step <= S (byte for byte), then appends. A
//    fresh run (resume_step = nullopt) starts from an empty file; a non-empty metrics.jsonl already
//    there is first renamed to metrics.jsonl.N (the smallest N not taken; moved_aside() says
//    where), never truncated. So the trainer must write a
//    step's lines (eval included) BEFORE saving that step's checkpoint.
//  - Each Write() is one write(2) of a whole line: a killed process leaves complete lines (at
//    worst a torn last line, which the next open drops with a warning).
//  - Doubles are written with at most 17 significant digits, enough to read back to the same bits
//    (nlohmann's Grisu2 dtoa; tested), so `replica compare` at tolerance 0 compares actual values.
//    NaN and ±Inf, which JSON lacks, are written as the strings "NaN", "Infinity", "-Infinity".
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace replica {

inline constexpr const char* kMetricsFile = "metrics.jsonl";

class MetricsWriter {
 public:
  // Opens run_dir/metrics.jsonl (creating run_dir if needed) per the rules above.
  MetricsWriter(const std::string& run_dir, std::optional<int64_t> resume_step);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // `line` must be an object with a non-negative integer "step". Error naming the file on failure.
  void Write(const nlohmann::json& line);
  const std::string& path() const { return path_; }
  // Where a fresh run moved an earlier metrics.jsonl, "" when it did not.
  const std::string& moved_aside() const { return moved_aside_; }

 private:
  std::string path_, moved_aside_;
  int fd_ = -1;
};

// Replaces non-finite floating-point numbers (recursively) by "NaN" / "Infinity" / "-Infinity".
nlohmann::json EncodeNonFinite(const nlohmann::json& j);

}  // namespace replica
