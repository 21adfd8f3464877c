// Readers of the dataset section: the tokenizer, the dataset class, and where its token files are
// (a mix file with {TOKENIZER}, a list of paths, or the run's data_paths.txt; --path-map).
#include <filesystem>
#include <set>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "run/olmo_core_import.h"

namespace replica::olmo_core {
namespace fs = std::filesystem;

namespace {

// DataMix.build's tokenizer directory: the Olmo 3 mixes are stored under "allenai/dolma3-tokenizer"
// (the same tokenizer as dolma2 under another name); v3-small-ppl-validation under
// "dolma2-tokenizer"; every other mix under the tokenizer's identifier.
std::string MixTokenizerDir(const std::string& mix, const std::string& identifier) {
  static const std::set<std::string> dolma3 = {"OLMo-mix-0625-official",
                                               "OLMo-mix-0925-official",
                                               "OLMo-midtraining-mix-0725-100B",
                                               "OLMo-midtraining-mix-0925-ingredient1-100B",
                                               "OLMo-midtraining-mix-0925-ingredient2-100B",
                                               "OLMo-midtraining-mix-1025-100B",
                                               "OLMo-longmino-mix-0625",
                                               "OLMo-longmino-mix-0925",
                                               "OLMo-longcontext-mix-1025-100B"};
  if (identifier == "allenai/dolma2-tokenizer") {
    if (dolma3.count(mix)) return "allenai/dolma3-tokenizer";
    if (mix == "v3-small-ppl-validation") return "dolma2-tokenizer";
  }
  return identifier;
}

}  // namespace

std::string Importer::MapPath(const std::string& p) const {
  size_t best = 0;
  std::string to;
  for (const std::string& m : opt_.path_map) {
    const size_t eq = m.find('=');
    const std::string from = m.substr(0, eq);
    if (p.rfind(from, 0) == 0 && from.size() > best) {
      best = from.size();
      to = m.substr(eq + 1);
    }
  }
  std::string mapped = best ? to + p.substr(best) : p;
  if (mapped.empty() || mapped.find("://") != std::string::npos) return mapped;
  return fs::absolute(fs::path(mapped)).lexically_normal().string();  // YAML may live elsewhere
}

std::vector<std::string> Importer::ResolveMix(const std::string& mix, const std::string& mix_path,
                                              const std::string& base_dir) {
  std::string file = opt_.mix_file;
  if (file.empty() && !opt_.mix_dir.empty())
    file = (fs::path(opt_.mix_dir) / (mix + ".txt")).string();
  if (file.empty()) {
    Unresolved(mix_path,
               fmt::format("the file list of mix '{}' is in OLMo-core's "
                           "src/olmo_core/data/mixes/{}.txt: give --mix-dir or "
                           "--mix-file (or --data-paths data_paths.txt)",
                           mix, mix),
               "data.paths");
    return {};
  }
  Require(fs::exists(file), "--mix-dir/--mix-file: {} does not exist (mix '{}' from {})", file, mix,
          mix_path);
  const std::string text = ReadFile(file);
  std::string base = base_dir;
  if (!base.empty() && base.back() != '/') base += '/';
  const std::string tok = MixTokenizerDir(mix, r_.tok_identifier.value);
  std::vector<std::string> paths;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos || line[a] == '#') continue;
    line = line.substr(a, line.find_last_not_of(" \t\r") - a + 1);
    const size_t comma = line.find(',');
    Require(comma != std::string::npos && line.find(',', comma + 1) == std::string::npos,
            "{}:{}: expected 'label,path'", file, n);
    std::string p = line.substr(comma + 1);
    const size_t t = p.find("{TOKENIZER}");
    Require(t != std::string::npos, "{}:{}: the path has no {{TOKENIZER}} placeholder", file, n);
    p.replace(t, 11, tok);
    paths.push_back(MapPath(base + p));
  }
  Require(!paths.empty(), "{}: no paths in mix file", file);
  mix_label_ =
      fmt::format("mix {} ({} files, {} with {{TOKENIZER}} = {})", mix, paths.size(), file, tok);
  return paths;
}

void Importer::Tokenizer(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kTokenizer);
  if (!cls) return;
  Obj o(*this, j, path, *cls);
  if (auto v = o.Int("vocab_size")) {
    if (*v < 1 || *v > kMaxVocab)
      Refuse(o.At("vocab_size"), fmt::format("{}: expected 1 to 2^31 (token ids are 32-bit signed "
                                             "integers)",
                                             *v));
    else
      r_.tok_vocab.Set(*v, o.At("vocab_size"));
  } else if (!o.Has("vocab_size")) {
    Refuse(o.At("vocab_size"), "missing (a required field of TokenizerConfig)");
  }
  for (auto [key, into] : {std::pair{"eos_token_id", &r_.eos_id}, {"pad_token_id", &r_.pad_id},
                           {"bos_token_id", &r_.bos_id}}) {
    if (auto v = o.Int(key)) {
      if (*v < 0 || *v >= kMaxVocab)
        Refuse(o.At(key), fmt::format("{}: expected a token id in [0, 2^31)", *v));
      else
        into->Set(*v, o.At(key));
    }
  }
  if (auto v = o.Str("identifier")) r_.tok_identifier.Set(*v, o.At("identifier"));
  o.Finish();
}

void Importer::Dataset(const json& j, const std::string& path) {
  const ClassRule* cls = Dispatch(j, path, Role::kDataset);
  if (!cls) return;  // refused whole: nothing is read
  Obj o(*this, j, path, *cls);
  if (const json* v = o.Take("tokenizer"))
    Tokenizer(*v, o.At("tokenizer"));
  else
    Refuse(o.At("tokenizer"), "missing (a required field of the dataset)");
  if (auto v = o.Int("sequence_length")) {
    if (*v < 1 || *v > (int64_t{1} << 31) - 1)
      Refuse(o.At("sequence_length"), fmt::format("{}: expected 1 to 2^31 - 1", *v));
    else
      r_.seq_len.Set(*v, o.At("sequence_length"));
  } else if (!o.Has("sequence_length")) {
    Refuse(o.At("sequence_length"), "missing (a required field of the dataset)");
  }
  if (cls->Field("max_target_sequence_length")) {
    if (auto v = o.Int("max_target_sequence_length")) {
      r_.max_target_seq_len.Set(*v, o.At("max_target_sequence_length"));
      if (r_.seq_len.set && *v != r_.seq_len.value)
        Refuse(o.At("max_target_sequence_length"),
               fmt::format("{} != sequence_length {}: OLMo-core then counts instances per file in "
                           "units of the target length, which replica's dataset does not",
                           *v, r_.seq_len.value));
    }
  }
  if (auto v = o.Str("dtype")) {
    if (*v == "uint32" || *v == "uint16")
      r_.dtype.Set(*v, o.At("dtype"));
    else
      Refuse(o.At("dtype"), fmt::format("'{}': replica reads uint16 or uint32 token files", *v));
  }
  if (const json* s = o.Take("source_permutation_seed")) {
    // Any Python int seeds random.Random; a JSON integer is one (a float, string or integer
    // beyond 64 bits is not).
    if (s->is_number_integer())
      r_.source_permutation_seed.Set(s->dump(), o.At("source_permutation_seed"));
    else
      Refuse(o.At("source_permutation_seed"),
             fmt::format("expected an integer seed below 2^64 in magnitude, got {}",
                         s->dump().substr(0, 100)));
  }
  if (cls->name == "olmo_core.data.numpy_dataset.NumpyPackedFSLDatasetConfig") {
    r_.packing.Set("obfd", path);
    if (r_.seq_len.set && (r_.seq_len.value < 2 || (r_.seq_len.value & (r_.seq_len.value - 1))))
      Refuse(o.At("sequence_length"),
             fmt::format("{} is not a power of two: OLMo-core's OBFD packer (SegmentTree) "
                         "asserts one",
                         r_.seq_len.value));
    if (auto v = o.Str("long_doc_strategy")) {
      if (*v == "truncate" || *v == "fragment")
        r_.long_doc_strategy.Set(*v, o.At("long_doc_strategy"));
      else
        Refuse(o.At("long_doc_strategy"),
               fmt::format("'{}': OLMo-core's LongDocStrategy is 'truncate' or 'fragment'", *v));
    }
    if (auto v = o.Int("source_group_size")) {
      if (*v >= 1)
        r_.source_group_size.Set(*v, o.At("source_group_size"));
      else
        Refuse(o.At("source_group_size"), fmt::format("{}: must be at least 1", *v));
    }
  }
  // NumpyFSLDataset and NumpyPackedFSLDataset both split each instance at EOS
  // (get_document_lengths).
  if (auto v = o.Bool("generate_doc_lengths"))
    r_.generate_doc_lengths.Set(*v, o.At("generate_doc_lengths"));
  const bool expand_glob = o.Bool("expand_glob").value_or(false);
  std::optional<std::string> mix = o.Str("mix");
  std::optional<std::string> base = o.Str("mix_base_dir");
  const json* paths = o.Take("paths");
  if (!opt_.data_paths_file.empty()) {
    const std::string text = ReadFile(opt_.data_paths_file);
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find_first_not_of(" \t\r");
      if (a == std::string::npos) continue;
      r_.data_paths.push_back(MapPath(line.substr(a, line.find_last_not_of(" \t\r") - a + 1)));
    }
    Require(!r_.data_paths.empty(), "--data-paths {}: no paths", opt_.data_paths_file);
    r_.data_paths_from = fmt::format("{} ({} files, in order; replaces {})", opt_.data_paths_file,
                                     r_.data_paths.size(), mix ? o.At("mix") : o.At("paths"));
  } else if (mix) {
    r_.data_paths = ResolveMix(*mix, o.At("mix"), MapPath(base.value_or("")));
    if (!r_.data_paths.empty())
      r_.data_paths_from = o.At("mix") + ", " + o.At("mix_base_dir") + ": " + mix_label_;
  } else if (paths) {
    if (!paths->is_array()) {
      Refuse(o.At("paths"), "expected a list of paths");
    } else {
      for (const json& p : *paths) {
        if (p.is_string())
          r_.data_paths.push_back(MapPath(p.get<std::string>()));
        else
          Refuse(o.At("paths"), fmt::format("expected strings, got {}", p.dump().substr(0, 200)));
      }
      r_.data_paths_from = o.At("paths");
      if (!expand_glob) {
        for (const std::string& p : r_.data_paths)
          if (p.find_first_of("*?[") != std::string::npos)
            Refuse(o.At("paths"), fmt::format("'{}' contains glob characters but expand_glob is "
                                              "false; replica would expand it",
                                              p));
      }
    }
  } else {
    Refuse(o.At("paths"), "the dataset names neither 'paths' nor 'mix'");
  }
  if (base && !mix) Ignored(o.At("mix_base_dir"), "no mix is named");
  bool local = !r_.data_paths.empty();
  for (const std::string& p : r_.data_paths) {
    if (p.find("://") != std::string::npos) {
      Unresolved(r_.data_paths_from,
                 fmt::format("'{}' is not a local path: map its prefix with "
                             "--path-map PREFIX=DIR",
                             p),
                 "data.paths");
      local = false;
      break;
    }
  }
  r_.data_resolved = local;
  o.Finish();
}

}  // namespace replica::olmo_core
