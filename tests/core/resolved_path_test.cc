// ResolvedPath: where a path leads once every symbolic link in it is followed, also through a link
// whose target does not exist yet (the case a check on an output path must not miss).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/resolved_path.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

class ResolvedPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "resolved-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = fs::canonical(tmpl);
    fs::create_directories(root_ / "run" / "checkpoints");
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(ResolvedPathTest, PlainPathsAreMadeAbsoluteAndNormal) {
  EXPECT_EQ(ResolvedPath(root_ / "run" / "." / "checkpoints" / "step-1"),
            root_ / "run" / "checkpoints" / "step-1");
  EXPECT_EQ(ResolvedPath(root_ / "run" / "x" / ".." / "checkpoints"), root_ / "run" / "checkpoints");
}

TEST_F(ResolvedPathTest, FollowsALinkToAnExistingDirectory) {
  fs::create_directory_symlink(root_ / "run" / "checkpoints", root_ / "ck");
  EXPECT_EQ(ResolvedPath(root_ / "ck" / "step-5"), root_ / "run" / "checkpoints" / "step-5");
  fs::create_directory_symlink("run", root_ / "rel");  // relative target
  EXPECT_EQ(ResolvedPath(root_ / "rel" / "checkpoints" / "new" / "deeper"),
            root_ / "run" / "checkpoints" / "new" / "deeper");
}

TEST_F(ResolvedPathTest, FollowsALinkWhoseTargetDoesNotExistYet) {
  fs::create_symlink(root_ / "run" / "checkpoints" / "step-7", root_ / "dangling");
  EXPECT_EQ(ResolvedPath(root_ / "dangling"), root_ / "run" / "checkpoints" / "step-7");
  // a chain: a missing link target that is itself reached through a link
  fs::create_directory_symlink(root_ / "run", root_ / "runlink");
  fs::create_symlink(root_ / "runlink" / "checkpoints" / "step-8", root_ / "chain");
  EXPECT_EQ(ResolvedPath(root_ / "chain" / "sub"), root_ / "run" / "checkpoints" / "step-8" / "sub");
}

TEST_F(ResolvedPathTest, ALinkLoopEndsWithoutHanging) {
  fs::create_symlink(root_ / "b", root_ / "a");
  fs::create_symlink(root_ / "a", root_ / "b");
  const fs::path r = ResolvedPath(root_ / "a" / "x");
  EXPECT_FALSE(r.empty());
}

}  // namespace
}  // namespace replica
