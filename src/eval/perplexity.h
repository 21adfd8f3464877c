// Perplexity evaluation as OLMo-core's LM evaluator (olmo_core/eval/lm_evaluator.py with
// NumpyPaddedFSLDataset): each held-out document becomes ONE instance, its tokens followed by EOS
// (documents in OLMo-core token files are EOS-terminated), truncated to the first seq_len tokens
// (not chunked) and right-padded. Position t predicts token t+1; padding is masked. Per set:
//   ce_loss = Σ CE / N_tokens (token-weighted over all documents), ppl = exp(ce_loss).
// Deterministic: batches are formed in file order and summed in that order.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "eval/eval_set.h"
#include "eval/scorer.h"
#include "eval/text_encoder.h"

namespace replica::eval {

struct PplInstance {
  std::string id;
  std::vector<int32_t> tokens;  // document + EOS, truncated to seq_len; at least 2 tokens
  bool truncated = false;
};

// Tokenizes a perplexity set. `append_eos` is true for documents (OLMo-core convention) and false
// for canaries, which are raw token sequences. Errors: seq_len < 2, or a kind mismatch.
std::vector<PplInstance> BuildPplInstances(const EvalSet& set, const TextEncoder& encoder,
                                           int64_t seq_len, bool append_eos = true);

struct PplResult {
  int64_t docs = 0;
  int64_t tokens = 0;  // predicted (labelled) tokens
  int64_t truncated_docs = 0;
  double ce_sum = 0;
  double ce_loss() const { return tokens ? ce_sum / static_cast<double>(tokens) : 0.0; }
  double ppl() const;
  nlohmann::json ToJson() const;  // {kind, docs, tokens, truncated_docs, ce_loss, ppl}
};

// Scores the instances `batch_size` at a time (rows padded with pad_id to the longest row).
PplResult EvaluatePerplexity(const std::vector<PplInstance>& instances, const LossFn& loss,
                             int64_t batch_size, int32_t pad_id);

}  // namespace replica::eval
