// `replica launch` logic with a fake mpirun (a shell script that records its arguments and exits
// with scripted codes): the rank schedule, retry limits, exit-2 refusal, fault variables reaching
// only the first attempt, launch.log, and clear errors for a missing mpirun.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/util.h"
#include "core/error.h"
#include "parallel/launch.h"

namespace replica::parallel {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class LaunchTest : public ::testing::Test {
 protected:

  // A fake mpirun: appends "np=<N> fault=<REPLICA_FAULT>" to calls.txt and exits with the next
  // code listed in codes.txt (one per line).
  std::string FakeMpirun(const std::vector<int>& codes) {
    std::ofstream c(dir_ / "codes.txt");
    for (int code : codes) c << code << "\n";
    c.close();
    const fs::path script = dir_ / "mpirun";
    std::ofstream s(script);
    s << "#!/bin/sh\n"
      << "d='" << dir_.string() << "'\n"
      << "echo \"np=$2 fault=${REPLICA_FAULT:-none} args=$*\" >> \"$d/calls.txt\"\n"
      << "n=$(wc -l < \"$d/calls.txt\")\n"
      << "exit $(sed -n \"${n}p\" \"$d/codes.txt\")\n";
    s.close();
    fs::permissions(script, fs::perms::owner_all);
    return script.string();
  }

  LaunchOptions Options(const std::string& mpirun, std::vector<int> ranks, int retries) {
    LaunchOptions o;
    o.ranks = std::move(ranks);
    o.max_retries = retries;
    o.mpirun = mpirun;
    o.replica_binary = "/bin/true";
    o.command = {"train", "cfg.yaml", "--run-dir", (dir_ / "run").string()};
    return o;
  }

  std::vector<std::string> Calls() {
    std::vector<std::string> lines;
    std::ifstream in(dir_ / "calls.txt");
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }

  test::TempDir tmp_{"launch"};
  fs::path dir_ = tmp_.path();
};

TEST_F(LaunchTest, RestartsWithFewerRanksAfterAKilledRank) {
  ::setenv("REPLICA_FAULT", "step:12", 1);
  const std::string mpirun = FakeMpirun({137, 137, 0});
  EXPECT_EQ(Launch(Options(mpirun, {4, 2, 1}, 3)), 0);
  ::unsetenv("REPLICA_FAULT");
  const auto calls = Calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].rfind("np=4 fault=step:12", 0), 0u) << calls[0];
  EXPECT_EQ(calls[1].rfind("np=2 fault=none", 0), 0u) << calls[1];
  EXPECT_EQ(calls[2].rfind("np=1 fault=none", 0), 0u) << calls[2];
  EXPECT_NE(calls[0].find("--oversubscribe"), std::string::npos);
  EXPECT_NE(calls[0].find("/bin/true train cfg.yaml --run-dir"), std::string::npos);
  const std::string log = Slurp(dir_ / "run" / "launch.log");
  EXPECT_NE(log.find("attempt 1 of 4: 4 rank(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("killed by signal 9"), std::string::npos) << log;
  EXPECT_NE(log.find("attempt 3 of 4: 1 rank(s)"), std::string::npos) << log;
  EXPECT_NE(log.find("attempt 3 with 1 rank(s) succeeded"), std::string::npos) << log;
}

TEST_F(LaunchTest, GivesUpAfterTheRetryLimit) {
  const std::string mpirun = FakeMpirun({1, 1, 1, 1});
  EXPECT_EQ(Launch(Options(mpirun, {2}, 2)), 1);
  EXPECT_EQ(Calls().size(), 3u);
  EXPECT_NE(Slurp(dir_ / "run" / "launch.log").find("giving up after 3 attempt(s)"),
            std::string::npos);
}

TEST_F(LaunchTest, BadInputIsNotRetried) {
  const std::string mpirun = FakeMpirun({2, 0});
  EXPECT_EQ(Launch(Options(mpirun, {4, 2}, 3)), 2);
  EXPECT_EQ(Calls().size(), 1u);
}

TEST_F(LaunchTest, MissingMpirunIsAClearError) {
  EXPECT_THROW(Launch(Options((dir_ / "no-such-mpirun").string(), {2}, 1)), Error);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", dir_.string().c_str(), 1);  // no mpirun there
  try {
    FindMpirun("");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mpirun not found on PATH"), std::string::npos);
  }
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_FALSE(fs::exists(dir_ / "run" / "checkpoints"));
}

TEST_F(LaunchTest, RefusesBadSchedulesAndCommands) {
  EXPECT_EQ(ParseRankSchedule("6,3"), (std::vector<int>{6, 3}));  // zero3 takes any divisor
  EXPECT_THROW(ParseRankSchedule("4,0"), Error);
  EXPECT_THROW(ParseRankSchedule(""), Error);
  EXPECT_THROW(ParseRankSchedule("4,,1"), Error);
  EXPECT_THROW(ParseRankSchedule("two"), Error);
  EXPECT_EQ(ParseRankSchedule("8,2,1"), (std::vector<int>{8, 2, 1}));
  EXPECT_THROW(RunDirFromArgs({"train", "cfg.yaml"}), Error);
  EXPECT_EQ(RunDirFromArgs({"train", "c", "--run-dir=/x"}), "/x");
  const std::string mpirun = FakeMpirun({0});
  LaunchOptions o = Options(mpirun, {2}, 0);
  o.command = {"eval", "--run-dir", "x"};
  EXPECT_THROW(Launch(o), Error);
  EXPECT_TRUE(Calls().empty());
}

}  // namespace
}  // namespace replica::parallel
