#include "tokenizer/tokenizer_hf_export.h"

#include <filesystem>
#include <limits>
#include <optional>

#include "core/atomic_file.h"
#include "core/error.h"
#include "tokenizer/tokenizer_hf.h"

namespace replica {
namespace {

// Bytes spelled in GPT-2's byte-level alphabet, UTF-8 encoded.
std::string ByteLevel(std::string_view bytes) {
  std::string s;
  for (unsigned char b : bytes) {
    const uint32_t cp = ByteLevelCodePoint(b);
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

// The last merge of token `id` (its rank): BPE over its bytes with tokens of lower rank only;
// nullopt when that does not end in two parts (the token is then reached only whole).
std::optional<std::pair<std::string_view, std::string_view>> LastMerge(const BpeModel& bpe,
                                                                       uint32_t id) {
  const std::string_view t = bpe.TokenBytes(id);
  std::vector<std::string_view> parts;
  for (size_t i = 0; i < t.size(); ++i) parts.push_back(t.substr(i, 1));
  while (parts.size() > 2) {
    uint32_t best = std::numeric_limits<uint32_t>::max();
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const std::string_view joined(parts[i].data(), parts[i].size() + parts[i + 1].size());
      const uint32_t r = bpe.Find(joined);
      if (r < id && r < best) best = r, at = i;
    }
    if (best == std::numeric_limits<uint32_t>::max()) break;
    parts[at] = std::string_view(parts[at].data(), parts[at].size() + parts[at + 1].size());
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  if (parts.size() != 2 || bpe.Find(parts[0]) >= id || bpe.Find(parts[1]) >= id) return std::nullopt;
  return std::make_pair(parts[0], parts[1]);
}

}  // namespace

nlohmann::ordered_json HfTokenizerJson(const Tokenizer& tok) {
  using json = nlohmann::ordered_json;
  const BpeModel& bpe = tok.bpe();
  json vocab = json::object();
  json merges = json::array();
  for (uint32_t id = 0; id < bpe.id_limit(); ++id) {
    if (!bpe.Has(id)) continue;
    vocab[ByteLevel(bpe.TokenBytes(id))] = id;
    if (bpe.TokenBytes(id).size() >= 2) {
      if (const auto m = LastMerge(bpe, id)) {
        merges.push_back(json::array({ByteLevel(m->first), ByteLevel(m->second)}));
      }
    }
  }
  json added = json::array();
  for (const AddedToken& t : tok.added_tokens().tokens()) {
    added.push_back({{"id", t.id}, {"content", t.content}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                     {"special", true}});
  }
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"},
                     {"pattern", {{"Regex", tok.pretokenizer().pattern()}}},
                     {"behavior", "Isolated"},
                     {"invert", false}},
                    {{"type", "ByteLevel"},
                     {"add_prefix_space", false},
                     {"trim_offsets", true},
                     {"use_regex", false}}})}};
  j["post_processor"] = nullptr;
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true},
                  {"use_regex", true}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", true},
                {"vocab", vocab},
                {"merges", merges}};
  return j;
}

std::vector<std::string> WriteHfTokenizerFiles(const Tokenizer& tok, const std::string& dir,
                                               int64_t model_max_length) {
  namespace fs = std::filesystem;
  using json = nlohmann::ordered_json;
  auto content = [&](std::optional<uint32_t> id) -> json {
    if (!id) return nullptr;
    return std::string(tok.TokenBytes(*id));
  };
  WriteFileAtomic((fs::path(dir) / "tokenizer.json").string(), HfTokenizerJson(tok).dump() + "\n");
  json special = json::object();
  if (tok.eos_id()) special["eos_token"] = content(tok.eos_id()), special["bos_token"] = content(tok.eos_id());
  if (tok.pad_id()) special["pad_token"] = content(tok.pad_id());
  if (tok.eos_id()) special["unk_token"] = content(tok.eos_id());
  WriteFileAtomic((fs::path(dir) / "special_tokens_map.json").string(), special.dump(2) + "\n");
  json config = {{"tokenizer_class", "GPT2Tokenizer"},
                 {"add_bos_token", false},
                 {"add_eos_token", false},
                 {"add_prefix_space", false},
                 {"clean_up_tokenization_spaces", false},
                 {"model_max_length", model_max_length}};
  for (const auto& [k, v] : special.items()) config[k] = v;
  WriteFileAtomic((fs::path(dir) / "tokenizer_config.json").string(), config.dump(2) + "\n");
  return {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"};
}

}  // namespace replica
