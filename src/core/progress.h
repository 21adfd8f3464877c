// A progress line for a long job on stderr: done / total, percent, elapsed, ETA and a detail
// ("eval: 41% (52,224 of 126,976 tokens), 0m37s elapsed, ETA 0m53s; sotu_cloze"). On a terminal
// the line is redrawn in place at most every `tty_interval_s`; otherwise (a log file, a pipe) a
// new line is printed at most every `log_interval_s`. The first update and Finish() always print.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace replica {

class ProgressMeter {
 public:
  ProgressMeter(std::string label, std::string unit, int64_t total, bool enabled = true,
                double tty_interval_s = 0.5, double log_interval_s = 10.0);
  ~ProgressMeter();
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void Update(int64_t done, const std::string& detail = "");
  // The final line ("... 100% ... in 1m30s"), ending a live terminal line.
  void Finish(const std::string& detail = "");

  // The line for `done` after `elapsed_s` (tested without a clock).
  std::string Line(int64_t done, double elapsed_s, const std::string& detail) const;

 private:
  void Print(const std::string& line, bool final);
  std::string label_, unit_;
  int64_t total_;
  bool enabled_, tty_, live_ = false, printed_ = false;
  double tty_interval_s_, log_interval_s_;
  std::chrono::steady_clock::time_point start_, last_;
};

// "37s", "4m05s", "2h03m"; "?" for a negative or non-finite time.
std::string FormatDuration(double seconds);

}  // namespace replica
