#include "eval/leak_guard.h"

#include <chrono>
#include <filesystem>
#include <system_error>

#include "core/checksum.h"
#include "core/error.h"
#include "core/log.h"

namespace replica::eval {

LeakGuardMode ParseLeakGuardMode(const std::string& s) {
  if (s == "off") return LeakGuardMode::kOff;
  if (s == "warn") return LeakGuardMode::kWarn;
  if (s == "stop") return LeakGuardMode::kStop;
  Fail("eval.leak_guard: expected stop, warn or off, got \"{}\"", s);
}

const char* LeakGuardModeName(LeakGuardMode mode) {
  switch (mode) {
    case LeakGuardMode::kOff: return "off";
    case LeakGuardMode::kWarn: return "warn";
    case LeakGuardMode::kStop: return "stop";
  }
  return "?";
}

void CheckTrainFilesDisjoint(const std::vector<std::string>& train_files,
                             const std::vector<std::string>& eval_files) {
  namespace fs = std::filesystem;
  struct EvalId {
    std::string path, canonical;
    uintmax_t size;
    std::string sha;  // computed on demand
  };
  std::vector<EvalId> evals;
  for (const std::string& e : eval_files) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(e, ec);
    Require(!ec, "eval file {}: cannot read its size ({})", e, ec.message());
    evals.push_back({e, fs::weakly_canonical(e).string(), size, ""});
  }
  for (const std::string& t : train_files) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(t, ec).string();
    const uintmax_t size = fs::file_size(t, ec);
    Require(!ec, "training file {}: cannot read its size ({})", t, ec.message());
    std::string train_sha;
    for (EvalId& e : evals) {
      Require(canonical != e.canonical,
              "training file {} is the evaluation file {}: evaluation data must never be trained on",
              t, e.path);
      // Hash only when sizes agree: training files are large and rarely the size of an eval file.
      if (size != e.size) continue;
      if (e.sha.empty()) e.sha = Sha256FileHex(e.path);
      if (train_sha.empty()) train_sha = Sha256FileHex(t);
      Require(train_sha != e.sha,
              "training file {} has the same content (sha256 {}) as the evaluation file {}: "
              "evaluation data must never be trained on",
              t, train_sha, e.path);
    }
  }
}

std::string Leak::Describe() const {
  return fmt::format("step {}: instance {} (batch row {}) carries eval item \"{}\" of {}: {} tokens "
                     "shared from row offset {} (item offset {})",
                     step, instance, row, eval_id, eval_file, length, row_offset, eval_offset);
}

LeakGuard::LeakGuard(std::shared_ptr<const NgramIndex> index, LeakGuardMode mode,
                     const DeconOptions& rule, int stride)
    : index_(std::move(index)), mode_(mode), rule_(rule), stride_(stride) {
  Require(index_ != nullptr || mode == LeakGuardMode::kOff, "leak guard: no eval index given");
  Require(stride >= 1, "leak guard: stride must be >= 1 (got {})", stride);
}

std::vector<Leak> LeakGuard::Check(int64_t step, const std::vector<int64_t>& instance_ids,
                                   const int32_t* tokens, int64_t rows, int64_t seq_len) {
  std::vector<Leak> leaks;
  if (mode_ == LeakGuardMode::kOff) return leaks;
  Require(static_cast<int64_t>(instance_ids.size()) == rows,
          "leak guard: {} instance ids for {} rows", instance_ids.size(), rows);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t r = 0; r < rows; ++r) {
    // Token ids are non-negative, so their int32 and uint32 representations are the same bytes.
    const uint32_t* row = reinterpret_cast<const uint32_t*>(tokens + r * seq_len);
    std::vector<Match> found;
    index_->Scan(row, static_cast<size_t>(seq_len), 0, static_cast<size_t>(seq_len), &found, stride_);
    for (const Match& m : found) {
      const IndexedItem& item = index_->items()[m.item];
      const bool leak = static_cast<int64_t>(m.length) >= rule_.min_span ||
                        static_cast<double>(m.length) >= rule_.min_coverage * item.tokens.size();
      if (!leak) continue;
      leaks.push_back({step, r, instance_ids[r], item.file, item.id, m.train_offset, m.eval_offset, m.length});
    }
  }
  seconds_last_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  seconds_total_ += seconds_last_;
  seconds_max_ = std::max(seconds_max_, seconds_last_);
  batches_ += 1;
  tokens_ += rows * seq_len;
  leaks_ += static_cast<int64_t>(leaks.size());
  if (!leaks.empty()) {
    if (mode_ == LeakGuardMode::kStop) {
      Fail("leak guard: {}{} (eval.leak_guard: stop)", leaks[0].Describe(),
           leaks.size() > 1 ? fmt::format("; and {} more leaks in this batch", leaks.size() - 1) : "");
    }
    for (const Leak& l : leaks) REPLICA_LOG_WARN("leak guard: {}", l.Describe());
  }
  return leaks;
}

nlohmann::json LeakGuard::Stats() const {
  return {{"mode", LeakGuardModeName(mode_)},
          {"batches", batches_},
          {"tokens", tokens_},
          {"leaks", leaks_},
          {"seconds_total", seconds_total_},
          {"seconds_per_batch_mean", batches_ ? seconds_total_ / batches_ : 0.0},
          {"seconds_per_batch_max", seconds_max_}};
}

}  // namespace replica::eval
