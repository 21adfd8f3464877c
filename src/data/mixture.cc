#include "data/mixture.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/checksum.h"
#include "core/error.h"
#include "data/data_order.h"
#include "data/numpy_rng.h"

namespace replica::data {
namespace {

uint64_t BudgetTokens(const MixtureOptions& o, const MixtureSource& s, double weight_sum) {
  if (o.total_tokens == 0) {
    Require(s.tokens > 0,
            "mixture source '{}': no token budget; give 'tokens', or weights with a total budget",
            s.name);
    return s.tokens;
  }
  Require(s.tokens == 0,
          "mixture source '{}': give either per-source 'tokens' or weights with a total budget, "
          "not both",
          s.name);
  Require(std::isfinite(s.weight) && s.weight > 0,
          "mixture source '{}': weight {} must be a positive number", s.name, s.weight);
  return static_cast<uint64_t>(std::floor(static_cast<double>(o.total_tokens) * s.weight /
                                          weight_sum));
}

}  // namespace

MixtureDataset::MixtureDataset(const MixtureOptions& o)
    : seq_len_(o.seq_len), seed_(o.seed), boundary_(o.document_boundary) {
  Require(!o.sources.empty(), "mixture: no sources given");
  Require(o.sources.size() < (uint64_t{1} << 32), "mixture: too many sources");
  Require(o.seq_len >= 2, "mixture: sequence length {} too small; need at least 2", o.seq_len);
  Require(!boundary_ || boundary_->eos_token_id >= 0,
          "mixture: document lengths need an EOS token id, got {}",
          boundary_ ? boundary_->eos_token_id : 0);
  double weight_sum = 0;
  for (const auto& s : o.sources) weight_sum += s.weight;
  const uint64_t T = static_cast<uint64_t>(o.seq_len);
  uint64_t total = 0;
  for (size_t si = 0; si < o.sources.size(); ++si) {
    const MixtureSource& src = o.sources[si];
    Require(!src.name.empty(), "mixture: source {} has no name", si);
    for (size_t sj = 0; sj < si; ++sj)
      Require(o.sources[sj].name != src.name, "mixture: source name '{}' used twice", src.name);
    Require(std::isfinite(src.max_repetition) && src.max_repetition >= 1.0,
            "mixture source '{}': max_repetition {} must be >= 1", src.name, src.max_repetition);
    Require(!src.paths.empty(), "mixture source '{}': no token files", src.name);
    sources_.push_back(std::make_unique<NumpyFslDataset>(
        FslDatasetOptions{src.paths, o.seq_len, o.dtype, o.vocab_size}));
    const NumpyFslDataset& ds = *sources_.back();
    uint64_t n = ds.num_instances();
    uint64_t budget = BudgetTokens(o, src, weight_sum);
    uint64_t k = budget / T;
    Require(k >= 1, "mixture source '{}': budget of {} tokens is less than one instance of {}",
            src.name, budget, T);
    auto cap = static_cast<uint64_t>(std::floor(src.max_repetition * static_cast<double>(n)));
    Require(k <= cap,
            "mixture source '{}': needs {} instances ({} tokens) but has {} (max_repetition {} "
            "allows {})",
            src.name, k, budget, n, src.max_repetition, cap);
    plan_.push_back({src.name, ds.fingerprint(), n, budget, k, total});
    total += k;
    Require(total <= kMaxInstances, "mixture: {} instances in total; at most {} are supported",
            total, kMaxInstances);
  }

  owner_.reserve(total);
  instance_.reserve(total);
  for (size_t si = 0; si < plan_.size(); ++si) {
    const uint64_t n = plan_[si].available_instances, k = plan_[si].selected_instances;
    for (uint64_t pass = 0; pass < k / n; ++pass)
      for (uint64_t i = 0; i < n; ++i) instance_.push_back(static_cast<uint32_t>(i));
    if (uint64_t rest = k % n; rest > 0) {
      std::vector<uint32_t> p(n);
      std::iota(p.begin(), p.end(), uint32_t{0});
      Pcg64 rng = Pcg64::FromSeed((static_cast<uint128>(o.seed) << 32) + si);
      Shuffle(rng, p);
      p.resize(rest);
      std::sort(p.begin(), p.end());
      instance_.insert(instance_.end(), p.begin(), p.end());
    }
    owner_.insert(owner_.end(), k, static_cast<uint32_t>(si));
  }

  Sha256 fp;
  fp.Update(fmt::format("replica.mixture.v1\nseed={}\nseq_len={}\n", o.seed, T));
  for (const auto& p : plan_)
    fp.Update(fmt::format("source={}\tdataset={}\tinstances={}\n", p.name, p.fingerprint,
                          p.selected_instances));
  fingerprint_ = fp.HexDigest();
}

std::pair<size_t, uint32_t> MixtureDataset::Resolve(uint64_t index) const {
  Require(index < owner_.size(), "mixture: instance {} out of range; the mixture has {}", index,
          owner_.size());
  return {owner_[index], instance_[index]};
}

void MixtureDataset::ReadInstance(uint64_t index, int32_t* out) const {
  auto [s, i] = Resolve(index);
  sources_[s]->ReadInstance(i, out);
}

nlohmann::json MixtureDataset::StateJson() const {
  nlohmann::json sources = nlohmann::json::array();
  for (const auto& p : plan_)
    sources.push_back({{"name", p.name},
                       {"fingerprint", p.fingerprint},
                       {"available_instances", p.available_instances},
                       {"budget_tokens", p.budget_tokens},
                       {"selected_instances", p.selected_instances}});
  return {{"version", 1},
          {"seed", seed_},
          {"sequence_length", seq_len_},
          {"fingerprint", fingerprint_},
          {"sources", sources}};
}

void MixtureDataset::VerifyState(const nlohmann::json& saved) const {
  try {
    Require(saved.at("version").get<int>() == 1, "mixture state: unsupported version");
    Require(saved.at("seed").get<uint64_t>() == seed_,
            "mixture state: seed {} in the checkpoint, {} configured",
            saved.at("seed").get<uint64_t>(), seed_);
    Require(saved.at("sequence_length").get<int64_t>() == seq_len_,
            "mixture state: sequence length {} in the checkpoint, {} configured",
            saved.at("sequence_length").get<int64_t>(), seq_len_);
    const auto& sources = saved.at("sources");
    Require(sources.size() == plan_.size(),
            "mixture state: {} sources in the checkpoint, {} configured", sources.size(),
            plan_.size());
    for (size_t i = 0; i < plan_.size(); ++i) {
      const auto& s = sources.at(i);
      std::string name = s.at("name").get<std::string>();
      Require(name == plan_[i].name, "mixture state: source {} is '{}' in the checkpoint, '{}' now",
              i, name, plan_[i].name);
      std::string fp = s.at("fingerprint").get<std::string>();
      Require(fp == plan_[i].fingerprint,
              "mixture state: source '{}' files changed: fingerprint {} in the checkpoint, {} now",
              name, fp, plan_[i].fingerprint);
      uint64_t k = s.at("selected_instances").get<uint64_t>();
      Require(k == plan_[i].selected_instances,
              "mixture state: source '{}' takes {} instances in the checkpoint, {} now", name, k,
              plan_[i].selected_instances);
    }
    std::string fp = saved.at("fingerprint").get<std::string>();
    Require(fp == fingerprint_, "mixture state: fingerprint {} in the checkpoint, {} now", fp,
            fingerprint_);
  } catch (const nlohmann::json::exception& e) {
    Fail("mixture state: malformed JSON: {}", e.what());
  }
}

}  // namespace replica::data
