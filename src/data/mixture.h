// A weighted mixture of token sources (as in Olmo 3's stage-2 mid-training mix): each source is a
// list of token files read as a NumpyFslDataset; the mixture takes a fixed number of instances
// from each and concatenates them, and the loader then shuffles the result like any dataset.
//
// The rule (docs/data.md, "Mixtures"), for sources s = 0..S-1 with n_s instances each:
//   budget B_s = tokens_s if given, else floor(total_tokens * weight_s / sum(weights))
//   k_s = floor(B_s / seq_len) instances (so k_s * seq_len <= B_s); k_s must be >= 1 and
//         <= floor(max_repetition_s * n_s)
//   selection_s = floor(k_s / n_s) full passes over 0..n_s-1, then the remaining k_s mod n_s
//         instances as sorted(p[:k_s mod n_s]) with p = arange(n_s, uint32) shuffled by
//         numpy Generator(PCG64(seed * 2^32 + s)).shuffle(p)
//   mixture instance g = selection_0 ++ selection_1 ++ ... (indexed in that order)
// Nothing depends on threads or time; the fingerprint covers seed, seq_len, and each source's
// name, dataset fingerprint and k_s, so a changed file or budget cannot resume silently.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "data/fsl_dataset.h"
#include "data/instance_dataset.h"

namespace replica::data {

struct MixtureSource {
  std::string name;
  std::vector<std::string> paths;
  double weight = 0;            // used with MixtureOptions::total_tokens
  uint64_t tokens = 0;          // explicit budget (used when total_tokens is 0)
  double max_repetition = 1.0;  // >= 1; above 1 a source may be repeated (up-sampled)
};

struct MixtureOptions {
  std::vector<MixtureSource> sources;
  uint64_t total_tokens = 0;  // > 0: budgets from weights; 0: every source gives `tokens`
  int64_t seq_len = 0;
  TokenDtype dtype = TokenDtype::kUint32;
  uint64_t vocab_size = 0;
  uint64_t seed = 0;
  // Document lengths of every instance, as NumpyFslDataset gives them (fsl_dataset.h); nullopt:
  // none.
  std::optional<DocumentBoundary> document_boundary;
};

struct MixtureSourcePlan {
  std::string name;
  std::string fingerprint;         // of the source's NumpyFslDataset
  uint64_t available_instances;    // n_s
  uint64_t budget_tokens;          // B_s
  uint64_t selected_instances;     // k_s
  uint64_t first_instance;         // where the source starts in the mixture's numbering
};

class MixtureDataset : public InstanceDataset {
 public:
  explicit MixtureDataset(const MixtureOptions& options);

  uint64_t num_instances() const override { return owner_.size(); }
  int64_t seq_len() const override { return seq_len_; }
  const std::string& fingerprint() const override { return fingerprint_; }
  void ReadInstance(uint64_t index, int32_t* out) const override;
  std::optional<DocumentBoundary> document_boundary() const override { return boundary_; }

  const std::vector<MixtureSourcePlan>& plan() const { return plan_; }
  // (source, instance within that source's dataset) of mixture instance `index`.
  std::pair<size_t, uint32_t> Resolve(uint64_t index) const;

  // {"version", "seed", "sequence_length", "fingerprint", "sources": [{"name", "fingerprint",
  //  "available_instances", "budget_tokens", "selected_instances"}]}: stored next to the loader
  // state so a resume can say which source changed.
  nlohmann::json StateJson() const;
  // Error naming the first differing source (or seed / sequence length) when `saved` does not
  // describe this mixture.
  void VerifyState(const nlohmann::json& saved) const;

 private:
  std::vector<std::unique_ptr<NumpyFslDataset>> sources_;
  std::vector<MixtureSourcePlan> plan_;
  std::vector<uint32_t> owner_;     // source of each mixture instance
  std::vector<uint32_t> instance_;  // instance within that source
  int64_t seq_len_;
  uint64_t seed_;
  std::string fingerprint_;
  std::optional<DocumentBoundary> boundary_;
};

}  // namespace replica::data
