// FindLatestValid against a writer that prunes as it goes (checkpoint.keep 1): a checkpoint that
// disappears while it is being verified was pruned because a newer one completed, so the search
// lists the directory again instead of answering "none". A reader running beside such a writer
// finds a valid checkpoint on every call once the first one exists.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>

#include "ops/cpu/cpu_backend.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/writer.h"
#include "core/log.h"
#include "testing/util.h"

namespace fs = std::filesystem;

namespace replica {
namespace {

TEST(FindLatestValidRace, APrunedCandidateMakesItLookAgain) {
  SetLogLevel(LogLevel::kError);  // the skips of a live race are expected
  test::TempDir tmp{"ckpt_race"};
  const std::string run = tmp.path().string();
  ParamLayout layout;
  layout.Add("model.embed_tokens.weight", {512, 256});
  const size_t n = layout.total_floats();
  FlatBuffer params(n), m(n), v(n);
  for (size_t i = 0; i < n; ++i) params.data()[i] = static_cast<float>(i % 97) * 1e-3f;

  CheckpointWriter writer({.run_dir = run, .keep = 1, .background = false}, CpuBackend());
  writer.Save(1, layout, params, m, v, 1, {{"step", 1}}, {{"model_type", "olmo3"}});
  std::atomic<bool> stop{false};
  std::thread t([&] {
    for (int64_t step = 2; step <= 150 && !stop; ++step)
      writer.Save(step, layout, params, m, v, step, {{"step", step}}, {{"model_type", "olmo3"}});
    stop = true;
  });
  int64_t calls = 0, misses = 0, last = 0;
  while (!stop) {
    const auto found = FindLatestValid(run);
    ++calls;
    if (!found) {
      ++misses;
    } else {
      EXPECT_GE(found->step, last);
      last = found->step;
    }
  }
  t.join();
  SetLogLevel(LogLevel::kInfo);
  EXPECT_EQ(misses, 0) << "of " << calls << " searches beside a pruning writer";
  EXPECT_GT(calls, 10);
}

}  // namespace
}  // namespace replica
