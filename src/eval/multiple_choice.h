// Multiple-choice evaluation by ranked classification, as OLMo-core's in-loop downstream
// evaluator / OLMES (olmo_eval tasks.py, metrics.py). For each item and choice i:
//   ctx = encode(context), cont = encode(choice)     (choices carry their leading space, " Paris")
//   query = (ctx + cont[:-1]), the continuation's tokens are scored at positions ctx_len-1 ...
//   S_i = Σ_t log p(cont_t | prefix)
// Metrics per set (averaged over items):
//   acc           argmax_i S_i == gold                          (oe-eval acc_raw)
//   len_norm_acc  argmax_i S_i / n_chars(choice_i) == gold      (acc_per_char; the leading space
//                 counts, characters are Unicode code points as Python's len())
//   bpb           -S_gold / n_bytes_utf8(choice_gold) · log2(e)  (logits_per_byte)
// Ties go to the lowest index (numpy argmax). An item whose query does not fit in seq_len is an
// Error naming file:line, unless `truncate_context` asks for OLMES's left-truncation of the
// context; a continuation longer than seq_len is always an Error.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "eval/eval_set.h"
#include "eval/scorer.h"
#include "eval/text_encoder.h"

namespace replica::eval {

struct McRequest {
  std::vector<int32_t> query;  // tokens fed to the model
  int64_t ctx_len = 0;         // continuation token i is predicted at position ctx_len - 1 + i
  std::vector<int32_t> cont;
  int64_t n_chars = 0, n_bytes = 0;
};

struct McPrepared {
  std::string id;
  int64_t gold = 0;
  bool truncated = false;
  std::vector<McRequest> choices;
};

std::vector<McPrepared> BuildMcRequests(const EvalSet& set, const TextEncoder& encoder,
                                        int64_t seq_len, bool truncate_context = false);

// Unicode code points of a UTF-8 string (bytes that are not continuation bytes).
int64_t Utf8Chars(const std::string& s);

struct McResult {
  int64_t items = 0, truncated_items = 0;
  int64_t correct = 0, correct_len_norm = 0;
  double bpb_sum = 0;
  std::vector<std::vector<double>> scores;  // S_i per item and choice (for tests and reports)
  nlohmann::json ToJson() const;  // {kind, items, truncated_items, acc, len_norm_acc, bpb}
};

// One LossFn call per (item, choice), batch 1, so each S_i is a separate sum.
McResult EvaluateMultipleChoice(const std::vector<McPrepared>& items, const LossFn& loss);

}  // namespace replica::eval
