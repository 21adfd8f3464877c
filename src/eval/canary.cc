#include "eval/canary.h"

#include <cmath>
#include <random>

#include "core/checksum.h"
#include "core/error.h"
#include "eval/perplexity.h"

namespace replica::eval {
namespace {

// Per-document mean CE of a token set.
std::vector<double> PerDocCe(const EvalSet& set, const LossFn& loss, int64_t seq_len) {
  // The byte encoder is never used for token documents; it only satisfies the interface.
  auto enc = MakeByteEncoder(256, 257);
  std::vector<PplInstance> inst = BuildPplInstances(set, *enc, seq_len, /*append_eos=*/false);
  std::vector<double> out;
  for (const PplInstance& x : inst) {
    PplResult r = EvaluatePerplexity({x}, loss, 1, 0);
    out.push_back(r.ce_loss());
  }
  return out;
}

void MeanVar(const std::vector<double>& v, double* mean, double* var) {
  double s = 0;
  for (double x : v) s += x;
  *mean = s / v.size();
  double q = 0;
  for (double x : v) q += (x - *mean) * (x - *mean);
  *var = v.size() > 1 ? q / (v.size() - 1) : 0.0;
}

}  // namespace

EvalSet MakeCanarySet(const std::string& name, uint64_t seed, int64_t count, int64_t length,
                      int64_t vocab) {
  Require(count >= 2 && length >= 2 && vocab >= 2,
          "canaries need count >= 2, length >= 2, vocab >= 2 (got {}, {}, {})", count, length, vocab);
  EvalSet set;
  set.name = name;
  set.path = name;
  set.kind = SetKind::kPerplexity;
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < count; ++i) {
    PplDoc d;
    d.id = name + "-" + std::to_string(i);
    d.line = i + 1;
    for (int64_t t = 0; t < length; ++t) {
      const unsigned __int128 wide = static_cast<unsigned __int128>(rng()) * static_cast<uint64_t>(vocab);
      d.tokens.push_back(static_cast<int32_t>(wide >> 64));
    }
    set.docs.push_back(std::move(d));
  }
  return set;
}

EvalSet MakeCanaryTwin(const EvalSet& registered, int64_t vocab) {
  Require(registered.kind == SetKind::kPerplexity && !registered.docs.empty(),
          "{}: a canary set must hold token documents", registered.path);
  std::vector<int32_t> all;
  const size_t length = registered.docs[0].tokens.size();
  for (const PplDoc& d : registered.docs) {
    Require(!d.tokens.empty() && d.tokens.size() == length,
            "{}:{}: canary documents must all be \"tokens\" arrays of one length", registered.path, d.line);
    all.insert(all.end(), d.tokens.begin(), d.tokens.end());
  }
  const uint64_t seed = Xxh3_64(all.data(), all.size() * sizeof(int32_t));
  return MakeCanarySet(registered.name + "_twin", seed, static_cast<int64_t>(registered.docs.size()),
                       static_cast<int64_t>(length), vocab);
}

nlohmann::json CanaryResult::ToJson() const {
  return {{"docs", docs}, {"registered_ce", registered_ce}, {"twin_ce", twin_ce},
          {"gap", gap},   {"z", z},                         {"alarm", alarm}};
}

CanaryResult EvaluateCanaries(const EvalSet& registered, const EvalSet& twin, const LossFn& loss,
                              int64_t seq_len, double alarm_z) {
  const std::vector<double> a = PerDocCe(registered, loss, seq_len);
  const std::vector<double> b = PerDocCe(twin, loss, seq_len);
  CanaryResult r;
  r.docs = static_cast<int64_t>(a.size());
  double va = 0, vb = 0;
  MeanVar(a, &r.registered_ce, &va);
  MeanVar(b, &r.twin_ce, &vb);
  r.gap = r.twin_ce - r.registered_ce;
  const double se = std::sqrt(va / a.size() + vb / b.size());
  // se == 0 needs every document to score identically; keep z finite so JSON can carry it.
  r.z = se > 0 ? r.gap / se : (r.gap > 0 ? 1e9 : 0.0);
  r.alarm = r.z > alarm_z;
  return r;
}

}  // namespace replica::eval
