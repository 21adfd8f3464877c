#include "core/progress.h"

#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace replica {
namespace {

std::string Thousands(int64_t n) {
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return n < 0 ? "-" + s : s;
}

}  // namespace

std::string FormatDuration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

ProgressMeter::ProgressMeter(std::string label, std::string unit, int64_t total, bool enabled,
                             double tty_interval_s, double log_interval_s)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(enabled),
      tty_(isatty(fileno(stderr)) != 0),
      tty_interval_s_(tty_interval_s),
      log_interval_s_(log_interval_s),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

ProgressMeter::~ProgressMeter() {
  if (live_) std::fputc('\n', stderr);
}

std::string ProgressMeter::Line(int64_t done, double elapsed_s, const std::string& detail) const {
  const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(done) / total_) : 0.0;
  std::string s = fmt::format("{}: {:.0f}% ({} of {} {}), {} elapsed", label_, 100 * frac,
                              Thousands(done), Thousands(total_), unit_, FormatDuration(elapsed_s));
  if (done < total_)
    s += ", ETA " + (frac > 0 ? FormatDuration(elapsed_s * (1 - frac) / frac) : std::string("?"));
  if (!detail.empty()) s += "; " + detail;
  return s;
}

void ProgressMeter::Update(int64_t done, const std::string& detail) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_).count();
  if (printed_ && since < (tty_ ? tty_interval_s_ : log_interval_s_)) return;
  last_ = now;
  Print(Line(done, std::chrono::duration<double>(now - start_).count(), detail), false);
}

void ProgressMeter::Finish(const std::string& detail) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  Print(Line(total_, elapsed, detail), true);
}

void ProgressMeter::Print(const std::string& line, bool final) {
  printed_ = true;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", line.c_str(), final ? "\n" : "");
    live_ = !final;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace replica
