// Helpers every test folder shares: the message of the Error a call throws, a scratch directory
// that is unique per process and removed at scope exit (ctest -j runs cases of one binary in
// parallel processes, so a fixed name would be shared), the source tree's preset configs and a
// tiny run config for tests of the config keys.
#pragma once
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "ops/cpu/cross_entropy.h"

namespace replica::test {

// The what() of the replica::Error that `f` throws, or "<no error>" when it returns normally.
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

// A fresh, empty directory under the system temp directory: <tmp>/replica-<tag>-XXXXXX.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "test") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / ("replica-" + tag + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw Error("TempDir: mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // Path of `name` inside the directory (not created).
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The source tree's configs/ folder (the presets), with a trailing slash.
inline std::string ConfigsDir() { return std::string(REPLICA_SOURCE_DIR) + "/configs/"; }

// A tiny run config (4 layers, hidden 64, vocab 256, window 8; 10 steps of 4 instances of 32
// tokens in micro-batches of 2; cosine with 2 warm-up steps) for tests that edit or --set its keys.
// Its data paths are relative and need not exist (nothing opens them).
inline constexpr const char* kTinyRunConfig = R"(
model:
  vocab_size: 256
  hidden_size: 64
  intermediate_size: 128
  num_hidden_layers: 4
  num_attention_heads: 4
  rms_norm_eps: 1.0e-6
  rope_theta: 500000
  sliding_window: 8
data:
  paths: [tokens/a.npy, "tokens/*.npy"]
  seq_len: 32
train:
  max_steps: 10
  global_batch_instances: 4
  micro_batch_instances: 2
optim:
  lr: 1.0e-3
  schedule: {type: cosine, warmup: 2}
)";

// `tokens` ids and labels uniform in [0, vocab) from std::mt19937(seed), about one label in
// seven kIgnoreLabel: a training batch for tests, the same for a given seed on every machine.
inline void RandomLabelledBatch(uint32_t seed, size_t tokens, int32_t vocab,
                                std::vector<int32_t>& ids, std::vector<int32_t>& labels) {
  std::mt19937 rng(seed);
  ids.resize(tokens);
  labels.resize(tokens);
  for (size_t i = 0; i < tokens; ++i) {
    ids[i] = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    labels[i] = rng() % 7 == 0 ? kIgnoreLabel : static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  }
}

}  // namespace replica::test
