#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace replica::eval {

std::vector<PplInstance> BuildPplInstances(const EvalSet& set, const TextEncoder& encoder,
                                           int64_t seq_len, bool append_eos) {
  Require(set.kind == SetKind::kPerplexity, "{}: is a {} set, expected perplexity documents",
          set.path, KindName(set.kind));
  Require(seq_len >= 2, "--seq-len must be at least 2 (got {})", seq_len);
  std::vector<PplInstance> out;
  out.reserve(set.docs.size());
  for (const PplDoc& d : set.docs) {
    PplInstance inst;
    inst.id = d.id;
    inst.tokens = d.tokens.empty() ? encoder.Encode(d.text) : d.tokens;
    if (append_eos) inst.tokens.push_back(encoder.eos_id());
    Require(inst.tokens.size() >= 2, "{}:{}: document \"{}\" has fewer than 2 tokens, nothing to predict",
            set.path, d.line, d.id);
    if (static_cast<int64_t>(inst.tokens.size()) > seq_len) {
      inst.tokens.resize(static_cast<size_t>(seq_len));
      inst.truncated = true;
    }
    out.push_back(std::move(inst));
  }
  return out;
}

double PplResult::ppl() const { return std::exp(ce_loss()); }

nlohmann::json PplResult::ToJson() const {
  return {{"kind", "perplexity"}, {"docs", docs},         {"tokens", tokens},
          {"truncated_docs", truncated_docs}, {"ce_loss", ce_loss()}, {"ppl", ppl()}};
}

PplResult EvaluatePerplexity(const std::vector<PplInstance>& instances, const LossFn& loss,
                             int64_t batch_size, int32_t pad_id) {
  Require(batch_size >= 1, "eval batch size must be at least 1 (got {})", batch_size);
  PplResult r;
  std::vector<int32_t> tokens, labels;
  for (size_t b0 = 0; b0 < instances.size(); b0 += static_cast<size_t>(batch_size)) {
    const size_t b1 = std::min(instances.size(), b0 + static_cast<size_t>(batch_size));
    const int64_t B = static_cast<int64_t>(b1 - b0);
    // Feed x[:-1] with labels x[1:]: the causal model gives the same logits as feeding all of x
    // and ignoring the last position, one position cheaper.
    int64_t T = 0;
    for (size_t i = b0; i < b1; ++i) T = std::max<int64_t>(T, instances[i].tokens.size() - 1);
    tokens.assign(static_cast<size_t>(B * T), pad_id);
    labels.assign(static_cast<size_t>(B * T), kIgnoreLabel);
    int64_t expected = 0;
    for (size_t i = b0; i < b1; ++i) {
      const auto& x = instances[i].tokens;
      int32_t* trow = tokens.data() + (i - b0) * T;
      int32_t* lrow = labels.data() + (i - b0) * T;
      for (size_t t = 0; t + 1 < x.size(); ++t) {
        trow[t] = x[t];
        lrow[t] = x[t + 1];
      }
      expected += static_cast<int64_t>(x.size()) - 1;
      r.truncated_docs += instances[i].truncated ? 1 : 0;
    }
    CrossEntropySums s = loss(tokens.data(), labels.data(), B, T);
    Require(s.tokens == expected, "perplexity: the model scored {} tokens, expected {}", s.tokens,
            expected);
    r.ce_sum += s.ce_sum;
    r.tokens += s.tokens;
    r.docs += B;
  }
  return r;
}

}  // namespace replica::eval
