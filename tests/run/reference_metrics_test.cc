// A reference run's curve read under replica's names: OLMo-core's console log and
// metrics_step<N>.json (tests/data/reference-runs, written by OLMo-core's own callbacks), W&B CSV
// exports, JSONL with OLMo-core names; format_float's spellings; malformed input named by
// file:line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "run/metrics_reader.h"
#include "run/reference_metrics.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference-runs";

double Num(const MetricsLog& log, int64_t step, const std::string& name) {
  const auto& row = log.steps.at(step);
  auto it = row.find(name);
  if (it == row.end()) ADD_FAILURE() << "step " << step << " has no " << name;
  return it == row.end() ? NAN : *MetricsLog::AsNumber(it->second);
}

std::string Write(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("replica_refmetrics_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

TEST(ReferenceMetrics, NamesMapToReplicas) {
  EXPECT_EQ(ReplicaMetricName("train/CE loss"), "ce_loss");
  EXPECT_EQ(ReplicaMetricName("train/Z loss"), "z_loss");
  EXPECT_EQ(ReplicaMetricName("optim/total grad norm"), "grad_norm");
  EXPECT_EQ(ReplicaMetricName("optim/LR (group 0)"), "lr");
  EXPECT_EQ(ReplicaMetricName("optim/LR (group 1)"), "optim/LR (group 1)");
  EXPECT_EQ(ReplicaMetricName("throughput/total tokens"), "tokens");
}

TEST(ReferenceMetrics, ConsoleLogOfOlmoCore) {
  const MetricsLog replica = ReadMetrics(kDir + "/metrics.jsonl");
  const MetricsLog log = ReadMetrics(kDir + "/olmo_core_console.log");
  EXPECT_EQ(log.format, "OLMo-core console log");
  ASSERT_EQ(log.steps.size(), 20u);
  for (int64_t s = 1; s <= 20; ++s) {
    // format_float keeps 4 significant digits (3 decimals between 1 and 10, 4 below 1).
    EXPECT_NEAR(Num(log, s, "ce_loss"), Num(replica, s, "ce_loss"), 5e-4) << s;
    EXPECT_NEAR(Num(log, s, "loss"), Num(replica, s, "loss"), 6e-4) << s;
    EXPECT_NEAR(Num(log, s, "grad_norm"), Num(replica, s, "grad_norm"), 5e-4) << s;
    EXPECT_NEAR(Num(log, s, "lr"), Num(replica, s, "lr"), 5e-5) << s;
    EXPECT_NEAR(Num(log, s, "z_loss"), Num(replica, s, "z_loss"), 1e-7) << s;
    EXPECT_EQ(Num(log, s, "tokens"), 2048.0 * s);  // "2,048": exact
    EXPECT_EQ(log.steps.at(s).at("skipped"), false);
  }
  EXPECT_EQ(Num(log, 1, "train/PPL"), 14731.0);  // "14,731": unmapped names stay
}

TEST(ReferenceMetrics, FormatFloatSpellings) {
  const std::string path = Write("spellings.log",
                                 "x\tINFO\t[step=3/???,epoch=1]\n"
                                 "    a=1.234B\n    b=2.50E-05\n    c=nan\n    d=-inf\n"
                                 "    e=12,345\n    f=0.0\n    g=3.5T\n"
                                 "x\tINFO\tFinished evals. Metrics:\n    eval/x=9.0\n");
  const MetricsLog log = ReadMetrics(path);
  ASSERT_EQ(log.steps.size(), 1u);
  EXPECT_EQ(Num(log, 3, "a"), 1.234e9);
  EXPECT_EQ(Num(log, 3, "b"), 2.5e-5);
  EXPECT_TRUE(std::isnan(Num(log, 3, "c")));
  EXPECT_EQ(Num(log, 3, "d"), -INFINITY);
  EXPECT_EQ(Num(log, 3, "e"), 12345.0);
  EXPECT_EQ(Num(log, 3, "f"), 0.0);
  EXPECT_EQ(Num(log, 3, "g"), 3.5e12);
  EXPECT_FALSE(log.steps.at(3).count("eval/x"));  // another message's lines are not the step's
}

TEST(ReferenceMetrics, MetricSaverFilesDirectoryAndOne) {
  const fs::path dir = fs::temp_directory_path() / ("replica_refsaver_" + std::to_string(getpid()));
  fs::create_directories(dir);
  for (int s : {5, 10, 15, 20})
    fs::copy_file(kDir + "/metrics_step" + std::to_string(s) + ".json",
                  dir / ("metrics_step" + std::to_string(s) + ".json"),
                  fs::copy_options::overwrite_existing);
  const MetricsLog replica = ReadMetrics(kDir + "/metrics.jsonl");
  const MetricsLog log = ReadMetrics(dir.string());
  ASSERT_EQ(log.steps.size(), 4u);
  for (int64_t s : {5, 10, 15, 20}) {
    EXPECT_EQ(Num(log, s, "ce_loss"), Num(replica, s, "ce_loss"));  // json.dumps: all digits
    EXPECT_EQ(Num(log, s, "loss"), Num(replica, s, "loss"));
    EXPECT_EQ(Num(log, s, "lr"), Num(replica, s, "lr"));
  }
  EXPECT_EQ(ReadMetrics(kDir + "/metrics_step15.json").steps.begin()->first, 15);
  fs::remove_all(dir);
  const std::string final_metrics = Write("metrics.json", "{\"train/CE loss\": 3.0}\n");
  try {
    ReadMetrics(final_metrics);
    ADD_FAILURE() << "metrics.json without a step was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metrics_step<N>.json"), std::string::npos) << e.what();
  }
}

TEST(ReferenceMetrics, WandbCsvExports) {
  const MetricsLog replica = ReadMetrics(kDir + "/metrics.jsonl");
  const MetricsLog chart = ReadMetrics(kDir + "/wandb_chart.csv");
  EXPECT_EQ(chart.format, "W&B CSV export");
  ASSERT_EQ(chart.steps.size(), 20u);
  for (int64_t s = 1; s <= 20; ++s) {
    EXPECT_EQ(Num(chart, s, "ce_loss"), Num(replica, s, "ce_loss"));
    EXPECT_EQ(Num(chart, s, "loss"), Num(replica, s, "loss"));
    EXPECT_EQ(chart.steps.at(s).size(), 5u);  // ce_loss, z_loss, grad_norm, lr, loss; no __MIN
  }
  const MetricsLog history = ReadMetrics(kDir + "/wandb_history.csv");
  EXPECT_FALSE(history.steps.at(7).count("grad_norm"));  // an empty cell is a missing value
  EXPECT_EQ(Num(history, 8, "grad_norm"), Num(replica, 8, "grad_norm"));
  EXPECT_FALSE(history.steps.at(1).count("_runtime"));
  // Two runs in one chart export: refused, naming both columns.
  const std::string two = Write("two.csv", "Step,a - train/CE loss,b - train/CE loss\n1,2,3\n");
  EXPECT_THROW(ReadMetrics(two), Error);
  const std::string bad = Write("bad.csv", "Step,train/CE loss\n1,2\n2,oops\n");
  try {
    ReadMetrics(bad);
    ADD_FAILURE() << "a non-number was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReadMetrics(Write("nostep.csv", "time,train/CE loss\n1,2\n")), Error);
}

TEST(ReferenceMetrics, JsonlOfStepAndLossWithEitherNames) {
  const MetricsLog log = ReadMetrics(Write(
      "curve.jsonl", "{\"_step\": 1, \"train/CE loss\": 3.5, \"_runtime\": 4}\n"
                     "{\"step\": 2, \"loss\": 3.25}\n"));
  EXPECT_EQ(Num(log, 1, "ce_loss"), 3.5);
  EXPECT_EQ(Num(log, 1, "loss"), 3.5);  // no Z loss recorded: z-loss off
  EXPECT_FALSE(log.steps.at(1).count("_runtime"));
  EXPECT_EQ(Num(log, 2, "loss"), 3.25);
}

TEST(ReferenceMetrics, UnknownFormatsSaySoAndEmptyLogsToo) {
  try {
    ReadMetrics(Write("notes.txt", "just some text\n"));
    ADD_FAILURE() << "a text file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("OLMo-core console log"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReadMetrics(Write("empty.log", "x [step=1/10,epoch=1]\nno metrics here\n")), Error);
}

}  // namespace
}  // namespace replica
