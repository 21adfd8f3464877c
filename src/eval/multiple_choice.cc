#include "eval/multiple_choice.h"

#include <cmath>

#include "core/error.h"

namespace replica::eval {

int64_t Utf8Chars(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::vector<McPrepared> BuildMcRequests(const EvalSet& set, const TextEncoder& encoder,
                                        int64_t seq_len, bool truncate_context) {
  Require(set.kind == SetKind::kMultipleChoice, "{}: is a {} set, expected multiple-choice items",
          set.path, KindName(set.kind));
  Require(seq_len >= 2, "--seq-len must be at least 2 (got {})", seq_len);
  std::vector<McPrepared> out;
  out.reserve(set.items.size());
  for (const McItem& item : set.items) {
    McPrepared p;
    p.id = item.id;
    p.gold = item.gold;
    const std::vector<int32_t> ctx = encoder.Encode(item.context);
    // dolma2 has no BOS, so the first continuation token must be conditioned on some context.
    Require(!ctx.empty(), "{}:{}: item \"{}\" has an empty context", set.path, item.line, item.id);
    for (size_t c = 0; c < item.choices.size(); ++c) {
      McRequest r;
      r.cont = encoder.Encode(item.choices[c]);
      r.n_chars = Utf8Chars(item.choices[c]);
      r.n_bytes = static_cast<int64_t>(item.choices[c].size());
      const int64_t m = static_cast<int64_t>(r.cont.size());
      Require(m <= seq_len,
              "{}:{}: item \"{}\" choice {} is {} tokens, longer than the sequence length {}",
              set.path, item.line, item.id, c, m, seq_len);
      std::vector<int32_t> full = ctx;
      full.insert(full.end(), r.cont.begin(), r.cont.end() - 1);
      if (static_cast<int64_t>(full.size()) > seq_len) {
        Require(truncate_context,
                "{}:{}: item \"{}\" choice {} needs {} tokens (context {} + continuation {} - 1), "
                "more than the sequence length {} (use --truncate-context to left-truncate the "
                "context as OLMES does)",
                set.path, item.line, item.id, c, full.size(), ctx.size(), m, seq_len);
        full.erase(full.begin(), full.end() - seq_len);
        p.truncated = true;
      }
      r.query = std::move(full);
      r.ctx_len = static_cast<int64_t>(r.query.size()) - m + 1;
      p.choices.push_back(std::move(r));
    }
    out.push_back(std::move(p));
  }
  return out;
}

nlohmann::json McResult::ToJson() const {
  const double n = items ? static_cast<double>(items) : 1.0;
  return {{"kind", "multiple_choice"},
          {"items", items},
          {"truncated_items", truncated_items},
          {"acc", correct / n},
          {"len_norm_acc", correct_len_norm / n},
          {"bpb", bpb_sum / n}};
}

McResult EvaluateMultipleChoice(const std::vector<McPrepared>& items, const LossFn& loss) {
  McResult r;
  std::vector<int32_t> labels;
  for (const McPrepared& item : items) {
    std::vector<double> scores;
    for (const McRequest& req : item.choices) {
      const int64_t T = static_cast<int64_t>(req.query.size());
      labels.assign(static_cast<size_t>(T), kIgnoreLabel);
      for (size_t i = 0; i < req.cont.size(); ++i) labels[req.ctx_len - 1 + i] = req.cont[i];
      CrossEntropySums s = loss(req.query.data(), labels.data(), 1, T);
      Require(s.tokens == static_cast<int64_t>(req.cont.size()),
              "multiple choice: the model scored {} tokens, expected {}", s.tokens, req.cont.size());
      scores.push_back(-s.ce_sum);
    }
    size_t best = 0, best_norm = 0;
    for (size_t c = 1; c < scores.size(); ++c) {
      if (scores[c] > scores[best]) best = c;
      if (scores[c] / item.choices[c].n_chars >
          scores[best_norm] / item.choices[best_norm].n_chars)
        best_norm = c;
    }
    const McRequest& gold = item.choices[item.gold];
    r.correct += best == static_cast<size_t>(item.gold);
    r.correct_len_norm += best_norm == static_cast<size_t>(item.gold);
    r.bpb_sum += -scores[item.gold] / static_cast<double>(gold.n_bytes) / std::log(2.0);
    r.truncated_items += item.truncated;
    r.items += 1;
    r.scores.push_back(std::move(scores));
  }
  return r;
}

}  // namespace replica::eval
