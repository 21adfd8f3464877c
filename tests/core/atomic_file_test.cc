// WriteFileAtomic replaces only regular files: a FIFO, a directory or a symbolic link to one is
// refused naming the path (a rename over it would put a regular file where the FIFO or device
// was); a symbolic link to a regular file keeps the link and replaces its target.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("replica_atomic_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

void ExpectRefused(const std::string& path, const std::string& what) {
  try {
    WriteFileAtomic(path, "text");
    ADD_FAILURE() << path << ": written";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST_F(AtomicFileTest, AFifoIsNotReplaced) {
  ASSERT_EQ(::mkfifo(P("fifo").c_str(), 0600), 0);
  ExpectRefused(P("fifo"), "a FIFO (named pipe), not a regular file");
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(P("fifo"))));
  EXPECT_FALSE(fs::exists(P("fifo") + ".tmp." + std::to_string(::getpid())));
}

TEST_F(AtomicFileTest, ADirectoryIsNotReplaced) {
  fs::create_directories(P("d"));
  ExpectRefused(P("d"), "a directory");
  EXPECT_TRUE(fs::is_directory(P("d")));
}

TEST_F(AtomicFileTest, ALinkToADeviceOrFifoIsNotReplaced) {
  fs::create_symlink("/dev/null", P("null"));
  ExpectRefused(P("null"), "a symbolic link to a character device");
  EXPECT_TRUE(fs::is_symlink(P("null")));
  ASSERT_EQ(::mkfifo(P("fifo").c_str(), 0600), 0);
  fs::create_symlink(P("fifo"), P("to_fifo"));
  ExpectRefused(P("to_fifo"), "a symbolic link to a FIFO");
  EXPECT_TRUE(fs::is_symlink(P("to_fifo")));
  fs::create_symlink(P("missing"), P("dangling"));
  ExpectRefused(P("dangling"), "a symbolic link to a missing file");
}

TEST_F(AtomicFileTest, ALinkToARegularFileKeepsTheLink) {
  WriteFileAtomic(P("target"), "old");
  fs::create_symlink(P("target"), P("link"));
  WriteFileAtomic(P("link"), "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(P("link"))));
  EXPECT_EQ(ReadFile(P("target")), "new");
  EXPECT_EQ(ReadFile(P("link")), "new");
}

TEST_F(AtomicFileTest, ARegularFileIsReplaced) {
  WriteFileAtomic(P("f"), "old");
  WriteFileAtomic(P("f"), "new");
  EXPECT_EQ(ReadFile(P("f")), "new");
}

}  // namespace
}  // namespace replica
