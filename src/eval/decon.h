// `replica decon`: finds registered eval items inside tokenized training data (docs/design.md §5).
// Items: perplexity documents as their tokens (13-grams), multiple-choice items as the tokens of
// context + gold choice encoded together, as they would appear in training text (8-grams).
// The scan probes every s-th position of each training file (ngram_index.h), so any verbatim
// shared span of >= n + s - 1 tokens is found, and every reported span is confirmed token by
// token. An item is *contaminated* when ONE confirmed span covers at least `min_coverage` of its
// tokens or is at least `min_span` tokens long; shorter overlaps (common phrases) are reported,
// with their union coverage, as contaminated = false. Results do not depend on the thread count.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "eval/eval_set.h"
#include "eval/ngram_index.h"
#include "eval/text_encoder.h"

namespace replica::eval {

struct DeconOptions {
  int ngram_ppl = 13, ngram_mc = 8;
  int stride_ppl = 8, stride_mc = 4;
  double min_coverage = 0.5;
  int64_t min_span = 50;
};

// Tokenizes the sets into index items (see above) and builds the index.
NgramIndex BuildDeconIndex(const std::vector<EvalSet>& sets, const TextEncoder& encoder,
                           const DeconOptions& options);

struct ItemVerdict {
  double coverage = 0;  // fraction of the item's tokens inside confirmed spans (union)
  uint64_t longest = 0;
  bool contaminated = false;
};
// Judges one item from its confirmed matches (all for that item).
ItemVerdict JudgeItem(const IndexedItem& item, const std::vector<Match>& matches,
                      const DeconOptions& options);

struct TrainHit {
  uint32_t file = 0;  // index into DeconReport::train_files
  Match match;
};

struct DeconReport {
  std::vector<std::string> train_files;
  uint64_t train_tokens = 0, probes = 0;
  double scan_seconds = 0;     // wall time of the scans
  double cpu_seconds = 0;      // CPU time of the scans, summed over threads (per-core throughput)
  int threads = 1;
  std::vector<TrainHit> hits;  // sorted by (item, file, train offset); duplicates removed
  // Builds the JSON contract: {eval_items, contaminated_items, items: [{eval_file, id, hits:
  // [{train_file, offset, length}]...}], ...}; items lists every item with a confirmed span.
  nlohmann::json ToJson(const NgramIndex& index, const DeconOptions& options,
                        size_t max_hits_per_item = 100) const;
  int64_t ContaminatedItems(const NgramIndex& index, const DeconOptions& options) const;
};

// Called from one thread while a scan runs: tokens scanned so far, of `total` (the files' sizes),
// and the file being scanned.
using ScanProgressFn =
    std::function<void(uint64_t done, uint64_t total, const std::string& file)>;

// Scans token files (headerless little-endian uint32, or uint16 when token_bytes == 2) with
// OpenMP over fixed chunks. Errors name a file that is missing or not a whole number of tokens.
// `progress`, when given, hears of every chunk the first thread finishes (results do not change).
DeconReport ScanTokenFiles(const NgramIndex& index, const std::vector<std::string>& files,
                           int token_bytes = 4, const ScanProgressFn& progress = {});

// Scans one in-memory stream (tests, the leak guard, benchmarks); single-threaded.
std::vector<Match> ScanStream(const NgramIndex& index, const uint32_t* tokens, size_t count,
                              int stride_override = 0, uint64_t* probes = nullptr);

}  // namespace replica::eval
