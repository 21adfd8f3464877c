// A text tokenizer as dolma2 / Hugging Face define one: added tokens are matched literally first
// (leftmost-longest, no normalisation, no stripping of surrounding whitespace); the text between
// them is cut into pieces by the pre-tokenizer regex, and each piece's UTF-8 bytes go through
// byte-level BPE. It never adds BOS/EOS itself (the data pipeline appends EOS per document).
// Input must be valid UTF-8: anything else is refused with an Error giving the byte offset, so
// Decode(Encode(x)) == x for every accepted x. Immutable after construction; Encode and Decode are
// safe to call from many threads at once.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_added.h"

namespace replica {

struct TokenizerInfo {
  std::string name;            // "dolma2", or the tokenizer.json path
  std::string source_path;     // the rank file or tokenizer.json it was loaded from
  std::string source_sha256;   // of that file
  std::optional<uint32_t> eos_id, pad_id;
};

class Tokenizer {
 public:
  Tokenizer(TokenizerInfo info, BpeModel bpe, Pretokenizer pretokenizer,
            std::vector<AddedToken> added);

  // Appends the ids of `text` to `out`. Error if `text` is not valid UTF-8.
  void Encode(std::string_view text, std::vector<uint32_t>* out) const;
  std::vector<uint32_t> Encode(std::string_view text) const;
  // Encodes text that contains no added tokens (they are treated as plain text); still checks UTF-8.
  void EncodeOrdinary(std::string_view text, std::vector<uint32_t>* out) const;

  // Cuts `text` into consecutive chunks whose encodings, concatenated, equal Encode(text), so a
  // long document can be encoded in parallel. Cuts fall only between a '\n' and an ASCII letter,
  // at the first such place at least `target_bytes` after the previous cut; with the cl100k
  // pattern no piece or added token spans such a place, and the scan after it does not depend on
  // what came before (argument in tokenizer.cc, checked by tests). For other patterns, or texts
  // not longer than target_bytes, the result is {text}. Deterministic: depends only on the text.
  std::vector<std::string_view> SplitForParallelEncode(std::string_view text,
                                                       size_t target_bytes) const;

  // The bytes the ids stand for (may be invalid UTF-8 for a partial sequence of ids). Error for an
  // id outside the vocabulary.
  std::string Decode(std::span<const uint32_t> ids) const;
  // Decode of one id, without copying.
  std::string_view TokenBytes(uint32_t id) const;

  // One past the largest id (100278 for dolma2).
  uint32_t vocab_size() const { return vocab_size_; }
  // Rows of an embedding table for this vocabulary: vocab_size rounded up to a multiple of 128.
  uint32_t embedding_rows() const { return (vocab_size_ + 127) / 128 * 128; }
  const TokenizerInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  std::optional<uint32_t> eos_id() const { return info_.eos_id; }
  std::optional<uint32_t> pad_id() const { return info_.pad_id; }
  const BpeModel& bpe() const { return bpe_; }
  const Pretokenizer& pretokenizer() const { return pretokenizer_; }
  const AddedTokenMatcher& added_tokens() const { return added_; }

 private:
  void EncodeSegment(std::string_view segment, std::vector<uint32_t>* out) const;

  TokenizerInfo info_;
  BpeModel bpe_;
  Pretokenizer pretokenizer_;
  AddedTokenMatcher added_;
  std::vector<int32_t> added_by_id_;  // id -> index into added_.tokens(), or -1
  uint32_t vocab_size_ = 0;
};

}  // namespace replica
