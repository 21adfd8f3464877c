// The evaluation suite a training run (or `replica eval`) runs every eval.interval steps: a list
// of perplexity and multiple-choice sets plus optional paired canaries, tokenized once at
// construction and scored through a LossFn at each call. Run() returns the "eval" object of a
// metrics.jsonl eval line (docs/design.md §4):
//   {"<set name>": {kind, ...metrics}, ..., "canary": {registered_ce, twin_ce, gap, z, alarm}}
// A canary alarm is also logged as a warning, and so is, once at construction, a set whose
// documents or contexts are cut to the sequence length (notes()). Set names must be unique.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "eval/canary.h"
#include "eval/eval_set.h"
#include "eval/multiple_choice.h"
#include "eval/perplexity.h"
#include "eval/scorer.h"
#include "eval/text_encoder.h"

namespace replica::eval {

struct EvalSuiteOptions {
  int64_t seq_len = 0;
  int64_t batch_size = 1;          // perplexity rows per LossFn call (<= the model's max batch)
  bool truncate_context = false;   // OLMES left-truncation of long multiple-choice contexts
  std::string canary_path;         // registered canary set; empty = no canaries
  int64_t canary_vocab = 0;        // ids of the twin are drawn from [0, canary_vocab)
  double canary_alarm_z = 4.0;
};

class EvalSuite {
 public:
  EvalSuite(const std::vector<std::string>& set_paths, const TextEncoder& encoder,
            const EvalSuiteOptions& options);
  // From sets already in memory (tests).
  EvalSuite(std::vector<EvalSet> sets, const TextEncoder& encoder, const EvalSuiteOptions& options,
            std::unique_ptr<EvalSet> canaries = nullptr);

  // `progress`, when given, is called after every model call with the positions scored so far,
  // the total (WorkPositions) and the set being scored.
  using ProgressFn = std::function<void(int64_t done, int64_t total, const std::string& set)>;
  nlohmann::json Run(const LossFn& loss, const ProgressFn& progress = {}) const;
  // Positions (batch rows x padded length) the model runs over in Run(): the unit of progress.
  int64_t WorkPositions() const;

  const std::vector<EvalSet>& sets() const { return sets_; }
  // Every file that holds evaluation data (sets and the registered canaries), for the leak guard.
  std::vector<std::string> RegisteredFiles() const;
  const EvalSet* canaries() const { return canary_.get(); }
  // What the scores will not show: e.g. "sotu_heldout_ppl: 107 of 107 documents are longer than
  // the sequence length 64 and are scored on their first 64 tokens only". Also logged as warnings
  // when the suite is built.
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  void Prepare(const TextEncoder& encoder);

  EvalSuiteOptions options_;
  int32_t pad_id_ = 0;
  std::vector<EvalSet> sets_;
  std::vector<std::vector<PplInstance>> ppl_;  // per set (empty for mc sets)
  std::vector<std::vector<McPrepared>> mc_;    // per set (empty for ppl sets)
  std::unique_ptr<EvalSet> canary_, twin_;
  std::vector<std::string> notes_;
};

}  // namespace replica::eval
