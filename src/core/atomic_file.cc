#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/regular_file.h"

namespace replica {

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) Fail("{}: cannot create: {}", tmp_, std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::Write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail("{}: write failed: {}", path_, std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFileWriter::Commit() {
  if (::fsync(fd_) != 0) Fail("{}: fsync failed: {}", path_, std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_.c_str());
    Fail("{}: close failed: {}", path_, std::strerror(errno));
  }
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    Fail("{}: rename failed: {}", path_, std::strerror(e));
  }
  auto parent = std::filesystem::path(path_).parent_path();
  FsyncDirectory(parent.empty() ? "." : parent.string());
}

void WriteFileAtomic(const std::string& path, std::string_view contents) {
  AtomicFileWriter w(path);
  w.Write(contents);
  w.Commit();
}

std::string ReadFile(const std::string& path) {
  const int fd = OpenRegularFileForReading(path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      Fail("{}: read failed: {}", path, std::strerror(e));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void FsyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some filesystems do not allow opening directories
  ::fsync(fd);
  ::close(fd);
}

}  // namespace replica
