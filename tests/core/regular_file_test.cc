// Input files must be regular files: a FIFO (or a directory) given as a config, weights or token
// file is refused at once with an Error naming the path, instead of blocking in open() forever.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mmap.h"

namespace replica {
namespace {

// Runs `read` on `path` in a forked child; the child exits 0 when it throws an Error naming the
// path and `what`, and dies of SIGALRM if it blocks.
void ExpectRefusedAtOnce(const std::function<void(const std::string&)>& read,
                         const std::string& path, const std::string& what) {
  EXPECT_EXIT(
      {
        ::alarm(10);
        try {
          read(path);
        } catch (const Error& e) {
          const std::string m = e.what();
          std::_Exit(m.find(path) != std::string::npos && m.find(what) != std::string::npos ? 0 : 3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(0), "")
      << path;
}

class RegularFileDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/regular_file_test_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
    fifo_ = dir_ + "/weights.safetensors";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_, fifo_;
};

TEST_F(RegularFileDeathTest, ReadFileRefusesFifo) {
  ExpectRefusedAtOnce([](const std::string& p) { ReadFile(p); }, fifo_, "FIFO");
}

TEST_F(RegularFileDeathTest, MappedFileRefusesFifo) {
  ExpectRefusedAtOnce([](const std::string& p) { MappedFile::Open(p); }, fifo_, "FIFO");
}

TEST_F(RegularFileDeathTest, DirectoriesAreRefusedByName) {
  ExpectRefusedAtOnce([](const std::string& p) { ReadFile(p); }, dir_, "directory");
  ExpectRefusedAtOnce([](const std::string& p) { MappedFile::Open(p); }, dir_, "directory");
}

TEST(RegularFile, RegularFilesStillRead) {
  const std::string path = ::testing::TempDir() + "/regular_file_test_plain.txt";
  WriteFileAtomic(path, "hello");
  EXPECT_EQ(ReadFile(path), "hello");
  MappedFile f = MappedFile::Open(path);
  ASSERT_EQ(f.size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f.data()), 5), "hello");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace replica
