#include "run/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <utility>

#include "core/error.h"

namespace replica {
namespace {

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

std::string UtcNow() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The holder's record as one line for messages: "pid 123 on host h since 2026-...".
std::string DescribeHolder(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "a process that has not yet recorded its pid";
  std::string pid = "?", host = "?", since = "?";
  std::string text(buf, static_cast<size_t>(n));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) {
      const std::string key = line.substr(0, sp), value = line.substr(sp + 1);
      if (key == "pid") pid = value;
      if (key == "host") host = value;
      if (key == "since") since = value;
    }
    pos = end + 1;
  }
  return fmt::format("pid {} on host {} (since {})", pid, host, since);
}

}  // namespace

RunDirLock RunDirLock::Acquire(const std::string& run_dir) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  Require(!ec, "{}: cannot create the run directory: {}", run_dir, ec.message());
  RunDirLock lock;
  lock.path_ = (std::filesystem::path(run_dir) / kRunLockFile).string();
  lock.fd_ = ::open(lock.path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (lock.fd_ < 0) Fail("{}: cannot open the run directory's lock file: {}", lock.path_, std::strerror(errno));
  while (::flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      Fail("{}: the run directory is in use by another trainer, {}; wait for it to finish or stop "
           "it, or use another --run-dir (lock: {})",
           run_dir, DescribeHolder(lock.fd_), lock.path_);
    }
    Fail("{}: cannot lock: {}", lock.path_, std::strerror(errno));
  }
  const std::string record =
      fmt::format("pid {}\nhost {}\nsince {}\n", ::getpid(), HostName(), UtcNow());
  if (::ftruncate(lock.fd_, 0) != 0 ||
      ::pwrite(lock.fd_, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size()))
    Fail("{}: cannot record the holder: {}", lock.path_, std::strerror(errno));
  return lock;
}

RunDirLock::RunDirLock(RunDirLock&& other) noexcept { *this = std::move(other); }

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace replica
