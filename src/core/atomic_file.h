// Crash-safe file writing (docs/design.md §2.6): data goes to "<path>.tmp.<pid>", is flushed and
// fsync'ed, then renamed over <path>, and the directory is fsync'ed. A failure (full disk, killed
// process) leaves either the old file or no file, never a partial one; errors name the path and
// the OS reason (e.g. "No space left on device"). Only a regular file is ever replaced: a path that
// is a device, FIFO, socket or directory (or a symbolic link to one) is refused naming it, and a
// symbolic link to a regular file has its target replaced, the link kept.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace replica {

// Streams bytes to a temporary file; Commit() makes it visible atomically. Destroying an
// uncommitted writer removes the temporary file.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void Write(const void* data, size_t size);
  void Write(std::string_view s) { Write(s.data(), s.size()); }
  void Commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

void WriteFileAtomic(const std::string& path, std::string_view contents);
std::string ReadFile(const std::string& path);  // whole file; Error naming the path on failure
void FsyncDirectory(const std::string& dir);

}  // namespace replica
