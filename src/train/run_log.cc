#include "train/run_log.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/log.h"

namespace replica {

RunLog::RunLog(const std::string& path, bool enabled)
    : tty_(isatty(fileno(stderr)) != 0), enabled_(enabled) {
  if (!enabled_) return;
  file_ = std::fopen(path.c_str(), "a");
  if (!file_) REPLICA_LOG_WARN("cannot append to {}: {}", path, std::strerror(errno));
}

RunLog::~RunLog() {
  EndProgress();
  if (file_) std::fclose(file_);
}

void RunLog::Line(const std::string& s) {
  if (!enabled_) return;
  EndProgress();
  std::fprintf(stderr, "%s\n", s.c_str());
  ToFile(s);
}

void RunLog::Progress(const std::string& s, bool to_file) {
  if (!enabled_) return;
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", s.c_str());
    std::fflush(stderr);
    live_ = true;
  } else {
    std::fprintf(stderr, "%s\n", s.c_str());
  }
  if (to_file) ToFile(s);
}

void RunLog::EndProgress() {
  if (live_) std::fprintf(stderr, "\n");
  live_ = false;
}

void RunLog::ToFile(const std::string& s) {
  if (!file_) return;
  std::fprintf(file_, "%s\n", s.c_str());
  std::fflush(file_);
}

}  // namespace replica
