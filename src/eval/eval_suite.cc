#include "eval/eval_suite.h"

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/log.h"

namespace replica::eval {

EvalSuite::EvalSuite(const std::vector<std::string>& set_paths, const TextEncoder& encoder,
                     const EvalSuiteOptions& options)
    : options_(options) {
  for (const std::string& p : set_paths) sets_.push_back(LoadEvalSet(p));
  if (!options.canary_path.empty()) canary_ = std::make_unique<EvalSet>(LoadEvalSet(options.canary_path));
  Prepare(encoder);
}

EvalSuite::EvalSuite(std::vector<EvalSet> sets, const TextEncoder& encoder,
                     const EvalSuiteOptions& options, std::unique_ptr<EvalSet> canaries)
    : options_(options), sets_(std::move(sets)), canary_(std::move(canaries)) {
  Prepare(encoder);
}

void EvalSuite::Prepare(const TextEncoder& encoder) {
  Require(options_.seq_len >= 2, "eval: sequence length must be at least 2 (got {})", options_.seq_len);
  Require(!sets_.empty() || canary_, "eval: no evaluation sets given");
  pad_id_ = encoder.pad_id();
  std::set<std::string> names;
  for (const EvalSet& s : sets_) {
    Require(names.insert(s.name).second, "{}: another evaluation set is also named \"{}\"", s.path, s.name);
    Require(s.name != "canary", "{}: the set name \"canary\" is reserved", s.path);
    if (s.kind == SetKind::kPerplexity) {
      ppl_.push_back(BuildPplInstances(s, encoder, options_.seq_len));
      mc_.emplace_back();
      const auto cut = std::count_if(ppl_.back().begin(), ppl_.back().end(),
                                     [](const PplInstance& i) { return i.truncated; });
      if (cut > 0)
        notes_.push_back(fmt::format(
            "{}: {} of {} documents are longer than the sequence length {} and are scored on "
            "their first {} tokens only (truncated_docs in its eval metrics)",
            s.name, cut, ppl_.back().size(), options_.seq_len, options_.seq_len));
    } else {
      mc_.push_back(BuildMcRequests(s, encoder, options_.seq_len, options_.truncate_context));
      ppl_.emplace_back();
      const auto cut = std::count_if(mc_.back().begin(), mc_.back().end(),
                                     [](const McPrepared& p) { return p.truncated; });
      if (cut > 0)
        notes_.push_back(fmt::format(
            "{}: {} of {} items have their context left-truncated to fit the sequence length {}",
            s.name, cut, mc_.back().size(), options_.seq_len));
    }
  }
  for (const std::string& note : notes_) REPLICA_LOG_WARN("eval: {}", note);
  if (canary_) {
    Require(options_.canary_vocab >= 2, "eval: canaries need the vocabulary size to draw the twin from");
    for (const PplDoc& d : canary_->docs) {
      for (int32_t t : d.tokens) {
        Require(t < options_.canary_vocab, "{}:{}: canary token {} is outside [0, {})", canary_->path,
                d.line, t, options_.canary_vocab);
      }
    }
    twin_ = std::make_unique<EvalSet>(MakeCanaryTwin(*canary_, options_.canary_vocab));
  }
}

std::vector<std::string> EvalSuite::RegisteredFiles() const {
  std::vector<std::string> out;
  for (const EvalSet& s : sets_) out.push_back(s.path);
  if (canary_) out.push_back(canary_->path);
  return out;
}

int64_t EvalSuite::WorkPositions() const {
  int64_t n = 0;
  const size_t batch = static_cast<size_t>(std::max<int64_t>(1, options_.batch_size));
  for (const auto& set : ppl_) {
    // EvaluatePerplexity's batches: rows x (longest document - 1).
    for (size_t b0 = 0; b0 < set.size(); b0 += batch) {
      const size_t b1 = std::min(set.size(), b0 + batch);
      size_t t = 0;
      for (size_t i = b0; i < b1; ++i) t = std::max(t, set[i].tokens.size() - 1);
      n += static_cast<int64_t>((b1 - b0) * t);
    }
  }
  for (const auto& set : mc_)
    for (const McPrepared& item : set)
      for (const McRequest& req : item.choices) n += static_cast<int64_t>(req.query.size());
  for (const EvalSet* c : {canary_.get(), twin_.get()}) {
    if (!c) continue;
    for (const PplDoc& d : c->docs)
      n += std::max<int64_t>(0, std::min<int64_t>(static_cast<int64_t>(d.tokens.size()),
                                                  options_.seq_len) - 1);
  }
  return n;
}

nlohmann::json EvalSuite::Run(const LossFn& model_loss, const ProgressFn& progress) const {
  nlohmann::json out = nlohmann::json::object();
  const int64_t total = progress ? WorkPositions() : 0;
  int64_t done = 0;
  std::string current;
  const LossFn counted = [&](const int32_t* t, const int32_t* l, int64_t B, int64_t T) {
    CrossEntropySums s = model_loss(t, l, B, T);
    done += B * T;
    progress(done, total, current);
    return s;
  };
  const LossFn& loss = progress ? counted : model_loss;
  for (size_t i = 0; i < sets_.size(); ++i) {
    current = sets_[i].name;
    if (sets_[i].kind == SetKind::kPerplexity) {
      out[sets_[i].name] = EvaluatePerplexity(ppl_[i], loss, options_.batch_size, pad_id_).ToJson();
    } else {
      out[sets_[i].name] = EvaluateMultipleChoice(mc_[i], loss).ToJson();
    }
  }
  if (canary_) {
    current = "canaries";
    CanaryResult c = EvaluateCanaries(*canary_, *twin_, loss, options_.seq_len, options_.canary_alarm_z);
    if (c.alarm) {
      REPLICA_LOG_WARN("canary alarm: the registered canaries ({}) cost {:.4f} nats/token, their "
                       "unregistered twin {:.4f} (z = {:.1f}): evaluation data may be in training",
                       canary_->path, c.registered_ce, c.twin_ce, c.z);
    }
    out["canary"] = c.ToJson();
  }
  return out;
}

}  // namespace replica::eval
