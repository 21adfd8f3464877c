// The leak guard: keeps evaluation data out of training, checked where a loader bug would show.
//  (a) Before training, CheckTrainFilesDisjoint refuses (Error) when a training file IS an
//      evaluation file: the same file by canonical path, or the same bytes (size + SHA-256).
//  (b) During training, LeakGuard::Check scans the tokens of every batch the loader actually
//      emits (after shuffling and packing) against the eval n-gram index (ngram_index.h). A row
//      span shared verbatim with an eval item is a leak when it is at least `min_span` tokens or
//      covers at least `min_coverage` of the item (DeconOptions). Mode kStop throws an Error
//      naming the step, the instance and the eval item; kWarn logs it and carries on; kOff does
//      nothing. Probing every position (stride 1) finds any shared span of >= n tokens.
// The time spent is accumulated so the trainer can report the guard's cost per step.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "eval/decon.h"
#include "eval/ngram_index.h"

namespace replica::eval {

enum class LeakGuardMode { kOff, kWarn, kStop };
LeakGuardMode ParseLeakGuardMode(const std::string& s);  // "off" | "warn" | "stop"
const char* LeakGuardModeName(LeakGuardMode mode);

void CheckTrainFilesDisjoint(const std::vector<std::string>& train_files,
                             const std::vector<std::string>& eval_files);

struct Leak {
  int64_t step = 0;
  int64_t row = 0;          // row in the emitted batch
  int64_t instance = 0;     // the loader's instance id of that row
  std::string eval_file, eval_id;
  uint64_t row_offset = 0;  // first shared token in the row
  uint64_t eval_offset = 0;
  uint64_t length = 0;
  std::string Describe() const;
};

class LeakGuard {
 public:
  LeakGuard(std::shared_ptr<const NgramIndex> index, LeakGuardMode mode,
            const DeconOptions& rule = {}, int stride = 1);

  // tokens: [rows, seq_len] row-major as the loader emitted them; instance_ids: one per row.
  // Returns the leaks found in this batch (kStop throws on the first batch that has any).
  std::vector<Leak> Check(int64_t step, const std::vector<int64_t>& instance_ids,
                          const int32_t* tokens, int64_t rows, int64_t seq_len);

  LeakGuardMode mode() const { return mode_; }
  int64_t batches_checked() const { return batches_; }
  double seconds_total() const { return seconds_total_; }
  double seconds_last() const { return seconds_last_; }
  double seconds_max() const { return seconds_max_; }
  int64_t leaks_found() const { return leaks_; }
  // {mode, batches, tokens, seconds_total, seconds_per_batch_mean, seconds_per_batch_max, leaks}
  nlohmann::json Stats() const;

 private:
  std::shared_ptr<const NgramIndex> index_;
  LeakGuardMode mode_;
  DeconOptions rule_;
  int stride_;
  int64_t batches_ = 0, tokens_ = 0, leaks_ = 0;
  double seconds_total_ = 0, seconds_last_ = 0, seconds_max_ = 0;
};

}  // namespace replica::eval
