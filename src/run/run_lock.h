// Exclusive use of a run directory by one trainer (docs/checkpoints.md, "One trainer per run
// directory"). The trainer holds an flock(2) on RUN/.lock from start-up until it exits; a second
// trainer on the same directory is refused with an Error naming the holder (pid, host, start time)
// instead of interleaving metrics.jsonl, deleting the first one's checkpoints as "newer than the
// resumed trajectory" or racing it on step-N.tmp.
//
// Promises:
//  - Acquire() never blocks: it takes the lock or throws.
//  - The lock belongs to the open file description, so the kernel releases it when the holder
//    exits in any way (SIGKILL included): a stale RUN/.lock file never blocks a later trainer.
//  - The descriptor is O_CLOEXEC: programs the trainer starts do not inherit the lock.
//  - RUN/.lock holds "pid <pid>\nhost <hostname>\nsince <UTC ISO time>\n" of the current holder;
//    the file is left in place on exit (removing it would race with the next holder).
#pragma once
#include <string>

namespace replica {

inline constexpr const char* kRunLockFile = ".lock";

class RunDirLock {
 public:
  // Creates run_dir if needed and locks run_dir/.lock. Error naming the directory and the holder
  // when another process holds it, or naming the file when it cannot be created or locked.
  static RunDirLock Acquire(const std::string& run_dir);

  RunDirLock() = default;
  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock();  // releases the lock

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace replica
