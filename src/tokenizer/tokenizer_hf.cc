#include "tokenizer/tokenizer_hf.h"

#include <nlohmann/json.hpp>

#include <array>

#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"

namespace replica {
namespace {

using nlohmann::json;

std::array<uint32_t, 256> MakeByteLevelTable() {
  std::array<uint32_t, 256> table{};
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    table[b] = printable ? static_cast<uint32_t>(b) : next++;
  }
  return table;
}

const std::array<uint32_t, 256>& ByteLevelTable() {
  static const std::array<uint32_t, 256> table = MakeByteLevelTable();
  return table;
}

// Code point -> byte, for the 324 code points the table uses (the rest map to -1).
const std::array<int16_t, 324>& ByteLevelInverse() {
  static const std::array<int16_t, 324> inverse = [] {
    std::array<int16_t, 324> inv;
    inv.fill(-1);
    for (int b = 0; b < 256; ++b) inv[ByteLevelTable()[b]] = static_cast<int16_t>(b);
    return inv;
  }();
  return inverse;
}

// A vocabulary entry spelled in the byte-level alphabet -> the bytes it stands for.
std::string FromByteLevel(const std::string& token, const std::string& where) {
  std::string bytes;
  const auto* p = reinterpret_cast<const uint8_t*>(token.data());
  size_t i = 0, n = token.size();
  while (i < n) {
    uint32_t cp;
    size_t len;
    if (p[i] < 0x80) {
      cp = p[i], len = 1;
    } else if ((p[i] & 0xE0) == 0xC0 && i + 1 < n) {
      cp = ((p[i] & 0x1Fu) << 6) | (p[i + 1] & 0x3Fu), len = 2;
    } else {
      cp = 0xFFFFFFFFu, len = 1;
    }
    Require(cp < 324 && ByteLevelInverse()[cp] >= 0,
            "{}: token '{}' has a character outside the byte-level alphabet (is this a byte-level "
            "BPE tokenizer?)",
            where, token);
    bytes += static_cast<char>(ByteLevelInverse()[cp]);
    i += len;
  }
  return bytes;
}

const json& Field(const json& obj, const char* key, const std::string& where) {
  Require(obj.is_object() && obj.contains(key), "{}: missing field '{}'", where, key);
  return obj.at(key);
}

bool FlagIsSet(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() && it->get<bool>();
}

bool IsNullOrEmptyString(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

void RequireByteLevel(const json& pre, bool want_regex, const std::string& where) {
  Require(pre.value("type", "") == "ByteLevel", "{}: expected a ByteLevel pre-tokenizer", where);
  Require(!FlagIsSet(pre, "add_prefix_space"),
          "{}: add_prefix_space = true is not supported", where);
  bool use_regex = pre.value("use_regex", true);
  Require(use_regex == want_regex, "{}: use_regex = {} is not supported here", where, use_regex);
}

Pretokenizer MakePretokenizer(const json& pre, const std::string& path) {
  std::string where = path + ": pre_tokenizer";
  Require(!pre.is_null(), "{}: a byte-level BPE needs a pre_tokenizer, found null", where);
  std::string type = pre.value("type", "");
  if (type == "ByteLevel") {
    RequireByteLevel(pre, /*want_regex=*/true, where);
    return Pretokenizer(kGpt2Pattern);
  }
  Require(type == "Sequence", "{}: type '{}' is not supported (ByteLevel or Sequence[Split, "
          "ByteLevel])", where, type);
  const json& list = Field(pre, "pretokenizers", where);
  Require(list.is_array() && list.size() == 2,
          "{}: only Sequence[Split, ByteLevel(use_regex=false)] is supported", where);
  const json& split = list[0];
  Require(split.value("type", "") == "Split", "{}.pretokenizers[0]: expected Split", where);
  const json& pattern = Field(split, "pattern", where + ".pretokenizers[0]");
  Require(pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string(),
          "{}.pretokenizers[0].pattern: only {{\"Regex\": ...}} is supported", where);
  std::string behavior = split.value("behavior", "");
  bool invert = split.value("invert", false);
  Pretokenizer::Gaps gaps;
  if (behavior == "Isolated" && !invert) {
    gaps = Pretokenizer::Gaps::kKeep;
  } else if (behavior == "Removed" && invert) {
    gaps = Pretokenizer::Gaps::kDrop;
  } else {
    Fail("{}.pretokenizers[0]: behavior '{}' with invert = {} is not supported (Isolated, or "
         "Removed with invert = true)", where, behavior, invert);
  }
  RequireByteLevel(list[1], /*want_regex=*/false, where + ".pretokenizers[1]");
  return Pretokenizer(pattern["Regex"].get<std::string>(), gaps);
}

std::pair<std::string, std::string> ParseMerge(const json& m, size_t i, const std::string& where) {
  if (m.is_string()) {
    const std::string& s = m.get_ref<const std::string&>();
    size_t sp = s.find(' ');
    Require(sp != std::string::npos && sp > 0 && sp + 1 < s.size() &&
                s.find(' ', sp + 1) == std::string::npos,
            "{}[{}]: expected \"left right\", got '{}'", where, i, s);
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  Require(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(),
          "{}[{}]: expected \"left right\" or [left, right]", where, i);
  return {m[0].get<std::string>(), m[1].get<std::string>()};
}

}  // namespace

uint32_t ByteLevelCodePoint(uint8_t b) { return ByteLevelTable()[b]; }

Tokenizer LoadHfTokenizerJson(const std::string& path) {
  std::string contents = ReadFile(path);
  const json doc = ParseJson(contents, path);
  try {
    Require(doc.is_object(), "{}: expected a JSON object", path);
    Require(!doc.contains("normalizer") || doc["normalizer"].is_null(),
            "{}: normalizer must be null (normalizers are not supported)", path);
    const json& model = Field(doc, "model", path);
    std::string where = path + ": model";
    Require(model.value("type", "BPE") == "BPE", "{}: type '{}' is not supported (BPE only)",
            where, model.value("type", ""));
    Require(!model.contains("dropout") || model["dropout"].is_null() ||
                (model["dropout"].is_number() && model["dropout"].get<double>() == 0.0),
            "{}: dropout must be null (it makes encoding random)", where);
    Require(!FlagIsSet(model, "byte_fallback"), "{}: byte_fallback is not supported", where);
    Require(IsNullOrEmptyString(model, "continuing_subword_prefix") &&
                IsNullOrEmptyString(model, "end_of_word_suffix"),
            "{}: continuing_subword_prefix / end_of_word_suffix are not supported", where);

    const json& vocab_json = Field(model, "vocab", where);
    Require(vocab_json.is_object(), "{}.vocab: expected an object token -> id", where);
    std::vector<std::pair<std::string, uint32_t>> vocab;
    vocab.reserve(vocab_json.size());
    for (const auto& [token, id] : vocab_json.items()) {
      Require(id.is_number_unsigned() && id.get<uint64_t>() < 0xFFFFFFFFull,
              "{}.vocab['{}']: id must be a non-negative integer", where, token);
      vocab.emplace_back(FromByteLevel(token, where + ".vocab"), id.get<uint32_t>());
    }
    const json& merges_json = Field(model, "merges", where);
    Require(merges_json.is_array(), "{}.merges: expected an array", where);
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(merges_json.size());
    for (size_t i = 0; i < merges_json.size(); ++i) {
      auto [left, right] = ParseMerge(merges_json[i], i, where + ".merges");
      merges.emplace_back(FromByteLevel(left, where + ".merges"),
                          FromByteLevel(right, where + ".merges"));
    }
    BpeModel bpe = BpeModel::FromMerges(vocab, merges, model.value("ignore_merges", false));

    Pretokenizer pre = MakePretokenizer(doc.contains("pre_tokenizer") ? doc["pre_tokenizer"]
                                                                     : json(nullptr),
                                        path);

    std::vector<AddedToken> added;
    if (doc.contains("added_tokens") && !doc["added_tokens"].is_null()) {
      const json& list = doc["added_tokens"];
      Require(list.is_array(), "{}: added_tokens must be an array", path);
      for (size_t i = 0; i < list.size(); ++i) {
        std::string w = fmt::format("{}: added_tokens[{}]", path, i);
        const json& t = list[i];
        const json& id = Field(t, "id", w);
        const json& content = Field(t, "content", w);
        Require(id.is_number_unsigned() && id.get<uint64_t>() < 0xFFFFFFFFull,
                "{}.id: expected a non-negative integer", w);
        Require(content.is_string(), "{}.content: expected a string", w);
        for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
          Require(!FlagIsSet(t, flag), "{}: {} = true is not supported", w, flag);
        }
        added.push_back({content.get<std::string>(), id.get<uint32_t>()});
      }
    }
    auto find_added = [&](std::initializer_list<const char*> names) -> std::optional<uint32_t> {
      for (const char* name : names) {
        for (const AddedToken& t : added) {
          if (t.content == name) return t.id;
        }
      }
      return std::nullopt;
    };
    TokenizerInfo info{path, path, Sha256Hex(contents),
                       find_added({"<|endoftext|>", "</s>", "<|end_of_text|>", "<eos>"}),
                       find_added({"<|pad|>", "<pad>", "[PAD]"})};
    return Tokenizer(std::move(info), std::move(bpe), std::move(pre), std::move(added));
  } catch (const json::exception& e) {
    Fail("{}: unexpected structure: {}", path, e.what());
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with(path)) throw;
    Fail("{}: {}", path, e.what());
  }
}

}  // namespace replica
