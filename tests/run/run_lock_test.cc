// RunDirLock: one holder per run directory; the second is refused naming the holder's pid and
// host; the lock ends with its holder, SIGKILL included (flock belongs to the open file).
#include "run/run_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"

namespace replica {
namespace {

namespace fs = std::filesystem;

std::string TempRun(const std::string& name) {
  const fs::path d = fs::temp_directory_path() /
                     ("replica_run_lock_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  return d.string();
}

std::string ErrorOf(const std::string& run) {
  try {
    RunDirLock::Acquire(run);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(RunDirLock, SecondHolderIsRefusedNamingTheFirst) {
  const std::string run = TempRun("second");
  {
    RunDirLock first = RunDirLock::Acquire(run);
    EXPECT_TRUE(first.held());
    const std::string record = ReadFile(run + "/.lock");
    EXPECT_NE(record.find("pid " + std::to_string(::getpid()) + "\n"), std::string::npos) << record;
    const std::string e = ErrorOf(run);
    EXPECT_NE(e.find(run), std::string::npos) << e;
    EXPECT_NE(e.find("in use"), std::string::npos) << e;
    EXPECT_NE(e.find("pid " + std::to_string(::getpid())), std::string::npos) << e;
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    EXPECT_NE(e.find(std::string("host ") + host), std::string::npos) << e;
  }
  // Released with its holder: the next trainer gets it.
  EXPECT_TRUE(RunDirLock::Acquire(run).held());
  fs::remove_all(run);
}

TEST(RunDirLock, MovedLockStaysHeld) {
  const std::string run = TempRun("moved");
  RunDirLock a = RunDirLock::Acquire(run);
  RunDirLock b = std::move(a);
  EXPECT_FALSE(a.held());
  EXPECT_TRUE(b.held());
  EXPECT_NE(ErrorOf(run).find("in use"), std::string::npos);
  fs::remove_all(run);
}

// A holder killed by SIGKILL leaves RUN/.lock behind, but not the lock.
TEST(RunDirLock, KilledHolderReleasesTheLock) {
  const std::string run = TempRun("killed");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    try {
      RunDirLock held = RunDirLock::Acquire(run);
      (void)!::write(ready[1], "x", 1);
      for (;;) ::pause();
    } catch (...) {
      std::_Exit(3);
    }
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  const std::string e = ErrorOf(run);
  EXPECT_NE(e.find("pid " + std::to_string(child)), std::string::npos) << e;
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(fs::exists(run + "/.lock"));
  EXPECT_TRUE(RunDirLock::Acquire(run).held());
  fs::remove_all(run);
}

}  // namespace
}  // namespace replica
