#include "train/train_data.h"

#include <glob.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "data/fsl_dataset.h"
#include "data/mixture.h"
#include "data/python_random.h"

namespace replica {
namespace fs = std::filesystem;

std::vector<std::string> ExpandDataPaths(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  for (const std::string& p : patterns) {
    glob_t g;
    std::memset(&g, 0, sizeof(g));
    const int rc = ::glob(p.c_str(), GLOB_ERR, nullptr, &g);
    size_t found = 0;
    if (rc == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        if (fs::is_regular_file(g.gl_pathv[i])) {
          out.emplace_back(g.gl_pathv[i]);
          ++found;
        }
      }
    }
    globfree(&g);
    Require(found > 0, "config key 'data.paths': '{}' matches no file", p);
  }
  return out;
}

std::vector<std::string> PermuteSourceFiles(const std::vector<std::string>& files,
                                            const std::string& seed) {
  std::optional<data::PythonRandom> rng = data::PythonRandomFromText(seed);
  Require(rng.has_value(), "config key 'data.source_permutation_seed': '{}' is no integer", seed);
  // OLMo-core: order = list(range(n)); random.Random(seed).shuffle(order); paths[order[i]].
  std::vector<uint64_t> order(files.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  data::PythonShuffle(*rng, order);
  std::vector<std::string> out;
  out.reserve(files.size());
  for (uint64_t i : order) out.push_back(files[i]);
  return out;
}

std::vector<std::string> TrainingFiles(const RunConfig& c) {
  std::vector<std::string> files;
  if (c.data.mixture.empty()) {
    files = ExpandDataPaths(c.data.paths);
    if (!c.data.source_permutation_seed.empty()) files = PermuteSourceFiles(files, c.data.source_permutation_seed);
  } else {
    for (const auto& s : c.data.mixture) {
      auto f = ExpandDataPaths(s.paths);
      files.insert(files.end(), f.begin(), f.end());
    }
  }
  Require(!files.empty(), "config: no training data: set data.paths (token files) or data.mixture");
  return files;
}

data::PackedDatasetOptions PackedDatasetOptionsFor(const RunConfig& c, uint64_t vocab_size) {
  data::PackedDatasetOptions o;
  o.paths = TrainingFiles(c);
  o.seq_len = c.data.seq_len;
  o.dtype = data::ParseDtype(c.data.dtype);
  o.vocab_size = vocab_size;
  o.eos_token_id = c.model.eos_token_id;
  o.bos_token_id = c.model.bos_token_id;
  o.pad_token_id = c.model.pad_token_id;
  o.long_doc_strategy =
      data::ParseLongDocStrategy(c.data.long_doc_strategy, "data.long_doc_strategy");
  o.source_group_size = c.data.source_group_size;
  o.generate_doc_lengths = c.data.generate_doc_lengths;
  return o;
}

std::optional<data::DocumentBoundary> DocumentBoundaryFor(const RunConfig& c) {
  if (!c.data.generate_doc_lengths) return std::nullopt;
  Require(c.model.eos_token_id >= 0,
          "config key 'data.generate_doc_lengths': document lengths need model.eos_token_id "
          "(documents end at EOS)");
  return data::DocumentBoundary{c.model.eos_token_id, c.model.bos_token_id};
}

std::shared_ptr<const data::InstanceDataset> OpenTrainingData(const RunConfig& c) {
  const uint64_t vocab =
      c.data.check_vocab ? static_cast<uint64_t>(c.model.vocab_size) : (uint64_t{1} << 31);
  const data::TokenDtype dtype = data::ParseDtype(c.data.dtype);
  if (c.data.packing == "obfd")
    return std::make_shared<data::PackedDataset>(PackedDatasetOptionsFor(c, vocab));
  if (c.data.mixture.empty()) {
    data::FslDatasetOptions o;
    o.paths = TrainingFiles(c);
    o.seq_len = c.data.seq_len;
    o.dtype = dtype;
    o.vocab_size = vocab;
    return std::make_shared<data::NumpyFslDataset>(o, DocumentBoundaryFor(c));
  }
  data::MixtureOptions o;
  for (const auto& s : c.data.mixture) {
    data::MixtureSource src;
    src.name = s.name;
    src.paths = ExpandDataPaths(s.paths);
    src.weight = s.weight;
    src.tokens = static_cast<uint64_t>(s.tokens);
    src.max_repetition = s.max_repetition;
    o.sources.push_back(std::move(src));
  }
  o.total_tokens = static_cast<uint64_t>(c.data.mixture_tokens);
  o.seq_len = c.data.seq_len;
  o.dtype = dtype;
  o.vocab_size = vocab;
  o.seed = static_cast<uint64_t>(c.data.mixture_seed);
  o.document_boundary = DocumentBoundaryFor(c);
  return std::make_shared<data::MixtureDataset>(o);
}

std::string DescribeTrainingData(const RunConfig& c) {
  const size_t n = TrainingFiles(c).size();
  if (c.data.mixture.empty()) return fmt::format("{} file(s)", n);
  return fmt::format("a mixture of {} sources ({} files)", c.data.mixture.size(), n);
}

}  // namespace replica
