#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/regular_file.h"

namespace replica {

namespace {

// `path` itself, or the regular file a symbolic link at `path` names (so the link survives the
// rename). Error when `path` is a device, FIFO, socket or directory, or a link to one: the rename
// would put a regular file in its place (a write to /dev/stdout would replace the device node).
std::string WritablePath(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return path;  // a new file
  if (S_ISREG(st.st_mode)) return path;
  if (S_ISLNK(st.st_mode)) {
    struct stat target {};
    if (::stat(path.c_str(), &target) != 0)
      Fail("{}: a symbolic link to a missing file ({}); replica will not write through it", path,
           std::strerror(errno));
    if (S_ISREG(target.st_mode)) {
      std::error_code ec;
      const auto real = std::filesystem::canonical(path, ec);
      if (ec) Fail("{}: cannot resolve the symbolic link: {}", path, ec.message());
      return real.string();
    }
    Fail("{}: a symbolic link to {}, not a regular file; replica writes files by replacing them "
         "and will not replace it (give a file path)",
         path, FileTypeName(target.st_mode));
  }
  Fail("{}: is {}, not a regular file; replica writes files by replacing them and will not "
       "replace it (give a file path)",
       path, FileTypeName(st.st_mode));
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path)
    : path_(WritablePath(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
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
