// Helpers of the user-facing messages: "did you mean" (edit distance, nearest candidate), counts
// for people (7.30 B), and the progress line of long jobs.
#include <gtest/gtest.h>

#include "core/human_count.h"
#include "core/progress.h"
#include "core/suggest.h"

namespace replica {
namespace {

TEST(Suggest, EditDistanceCountsTranspositionsAsOne) {
  EXPECT_EQ(EditDistance("train", "train"), 0u);
  EXPECT_EQ(EditDistance("trian", "train"), 1u);   // transposition
  EXPECT_EQ(EditDistance("--rundir", "--run-dir"), 1u);
  EXPECT_EQ(EditDistance("plan", "plot"), 2u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(Suggest, ClosestMatchOnlyWhenNear) {
  const std::vector<std::string> commands = {"bench", "compare", "data", "eval", "plan", "plot",
                                             "train"};
  EXPECT_EQ(ClosestMatch("trian", commands), "train");
  EXPECT_EQ(ClosestMatch("compre", commands), "compare");
  EXPECT_EQ(ClosestMatch("evl", commands), "eval");
  EXPECT_EQ(ClosestMatch("xyzzy", commands), std::nullopt);
  EXPECT_EQ(ClosestMatch("train", commands), std::nullopt);  // not a misspelling
  EXPECT_EQ(ClosestMatch("--run", {"--json", "--run-dir"}), "--run-dir");  // a prefix
  EXPECT_EQ(ClosestMatch("", commands), std::nullopt);
}

TEST(HumanCount, PowersOfAThousandWithTwoDecimals) {
  EXPECT_EQ(HumanCount(0), "0");
  EXPECT_EQ(HumanCount(999), "999");
  EXPECT_EQ(HumanCount(1000), "1.00 K");
  EXPECT_EQ(HumanCount(4194304), "4.19 M");
  EXPECT_EQ(HumanCount(7298617344), "7.30 B");
  EXPECT_EQ(HumanCount(2504192425984), "2.50 T");
  EXPECT_EQ(HumanCount(999999), "1.00 M");  // not "1000.00 K"
  EXPECT_EQ(CountWithHuman(7298617344), "7298617344 (7.30 B)");
  EXPECT_EQ(CountWithHuman(512), "512");
}

TEST(Progress, LineHasPercentEtaAndDetail) {
  ProgressMeter m("eval", "positions", 200000, /*enabled=*/false);
  EXPECT_EQ(m.Line(50000, 30, "sotu_cloze"),
            "eval: 25% (50,000 of 200,000 positions), 30s elapsed, ETA 1m30s; sotu_cloze");
  EXPECT_EQ(m.Line(200000, 125, ""), "eval: 100% (200,000 of 200,000 positions), 2m05s elapsed");
  EXPECT_EQ(m.Line(0, 1, ""), "eval: 0% (0 of 200,000 positions), 1s elapsed, ETA ?");
  EXPECT_EQ(FormatDuration(7380), "2h03m");
}

}  // namespace
}  // namespace replica
