// What the trainer tells the user: lines on stderr, each also appended to RUN/train.log, and a
// progress line that is redrawn in place on a terminal and printed as an ordinary line otherwise.
// A disabled log (data-parallel ranks other than 0) prints and records nothing.
#pragma once
#include <cstdio>
#include <string>

namespace replica {

class RunLog {
 public:
  // Appends to `path`; a file that cannot be opened is a warning, not an error (stderr still works).
  RunLog(const std::string& path, bool enabled);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // Ends a live progress line first.
  void Line(const std::string& s);
  // to_file = false: stderr only (a terminal redraw between the logged intervals).
  void Progress(const std::string& s, bool to_file);
  bool tty() const { return enabled_ && tty_; }  // progress lines are redrawn in place
  void EndProgress();                             // a newline after a live progress line

 private:
  void ToFile(const std::string& s);
  std::FILE* file_ = nullptr;
  bool tty_, enabled_, live_ = false;
};

}  // namespace replica
