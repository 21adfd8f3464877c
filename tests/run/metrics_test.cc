// metrics.jsonl: exact round trip of doubles, truncation on resume, torn last lines, reading.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "testing/util.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "run/metrics_reader.h"
#include "run/metrics_writer.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override { SetLogLevel(LogLevel::kError); }
  std::string File() const { return (run_ / "metrics.jsonl").string(); }
  test::TempDir tmp_{"metrics"};
  fs::path run_ = tmp_.path() / "run";  // not created: the writer creates it
};

TEST_F(MetricsTest, DoublesRoundTripBitExact) {
  std::mt19937_64 rng(42);
  std::vector<double> values = {0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 5e-324, 1.7976931348623157e308,
                                -0.0, 3.0000000000000004, 0.30000000000000004};
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d)) values.push_back(d);
    values.push_back(std::ldexp(static_cast<double>(rng() >> 11), -53) * 10.0);  // loss-like
  }
  {
    MetricsWriter w(run_.string(), std::nullopt);
    for (size_t i = 0; i < values.size(); ++i) w.Write({{"step", i}, {"loss", values[i]}});
  }
  MetricsLog log = ReadMetrics(run_.string());
  ASSERT_EQ(log.steps.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double back = log.steps.at(static_cast<int64_t>(i)).at("loss").get<double>();
    ASSERT_EQ(std::memcmp(&back, &values[i], sizeof(double)), 0)
        << "step " << i << ": " << values[i] << " came back as " << back;
  }
}

TEST_F(MetricsTest, NonFiniteValuesAreWrittenAsStrings) {
  {
    MetricsWriter w(run_.string(), std::nullopt);
    w.Write({{"step", 1},
             {"loss", std::numeric_limits<double>::quiet_NaN()},
             {"grad_norm", std::numeric_limits<double>::infinity()}});
    w.Write({{"step", 1}, {"eval", {{"c4", {{"ppl", -std::numeric_limits<double>::infinity()}}}}}});
  }
  EXPECT_EQ(ReadFile(File()),
            "{\"grad_norm\":\"Infinity\",\"loss\":\"NaN\",\"step\":1}\n"
            "{\"eval\":{\"c4\":{\"ppl\":\"-Infinity\"}},\"step\":1}\n");
  MetricsLog log = ReadMetrics(File());
  EXPECT_TRUE(std::isnan(*MetricsLog::AsNumber(log.steps.at(1).at("loss"))));
  EXPECT_EQ(*MetricsLog::AsNumber(log.steps.at(1).at("eval.c4.ppl")),
            -std::numeric_limits<double>::infinity());
}

TEST_F(MetricsTest, ResumeKeepsOneTrajectory) {
  {
    MetricsWriter w(run_.string(), std::nullopt);
    for (int s = 1; s <= 30; ++s) {
      w.Write({{"step", s}, {"loss", 10.0 / s}});
      if (s == 20) w.Write({{"step", 20}, {"eval", {{"heldout", {{"loss", 1.5}}}}}});
    }
    w.Write({{"step", 30}, {"eval", {{"heldout", {{"loss", 1.25}}}}}});
  }
  const std::string before = ReadFile(File());
  {
    MetricsWriter w(run_.string(), 20);  // resumed from the step-20 checkpoint
    for (int s = 21; s <= 30; ++s) w.Write({{"step", s}, {"loss", 10.0 / s}});
    w.Write({{"step", 30}, {"eval", {{"heldout", {{"loss", 1.25}}}}}});
  }
  // Same trajectory written twice around a resume: byte-identical file, no duplicated step.
  EXPECT_EQ(ReadFile(File()), before);
  MetricsLog log = ReadMetrics(run_.string());
  EXPECT_EQ(log.steps.size(), 30u);
  EXPECT_EQ(log.steps.at(20).at("eval.heldout.loss"), 1.5);
  EXPECT_EQ(log.steps.at(20).at("loss"), 0.5);

  MetricsWriter fresh(run_.string(), std::nullopt);  // a run that restarts from scratch
  EXPECT_EQ(ReadFile(File()), "");
}

TEST_F(MetricsTest, TornLastLineIsDroppedOnResume) {
  fs::create_directories(run_);
  std::ofstream(File()) << "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.4}\n{\"step\":3,\"lo";
  {
    MetricsWriter w(run_.string(), 5);
    w.Write({{"step", 3}, {"loss", 2.25}});
  }
  EXPECT_EQ(ReadFile(File()),
            "{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.4}\n{\"loss\":2.25,\"step\":3}\n");
  // A malformed line in the middle is not silently dropped.
  std::ofstream(File()) << "{\"step\":1}\nnot json\n{\"step\":2}\n";
  try {
    MetricsWriter w(run_.string(), 5);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl:2:"), std::string::npos) << e.what();
  }
}

TEST_F(MetricsTest, ReaderNamesFileAndLine) {
  fs::create_directories(run_);
  auto expect_error = [&](const std::string& content, const std::string& needle) {
    std::ofstream(File(), std::ios::trunc) << content;
    try {
      ReadMetrics(run_.string());
      ADD_FAILURE() << "accepted: " << content;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("{\"step\":1}\n{\"step\":2,\"loss\":}\n", "metrics.jsonl:2: malformed JSON");
  expect_error("{\"step\":1}\n[1,2]\n", "metrics.jsonl:2: expected a JSON object");
  expect_error("{\"loss\":1}\n", "metrics.jsonl:1: expected a non-negative integer \"step\"");
  expect_error("{\"step\":1.5}\n", "metrics.jsonl:1: expected a non-negative integer");
  expect_error("{\"step\":1,\"loss\":1}\n{\"step\":1,\"loss\":1}\n",
               "metrics.jsonl:2: 'loss' appears twice for step 1");
  expect_error("", "no metrics lines");
  EXPECT_THROW(ReadMetrics((run_ / "nope").string()), Error);
}

}  // namespace
}  // namespace replica
