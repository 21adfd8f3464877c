// Literal matcher for added tokens (dolma2's 22 special strings, a tokenizer.json's added_tokens).
// Finds the leftmost occurrence of any token in a text and, among tokens starting there, the
// longest: the semantics of Hugging Face's added-vocabulary split (Aho-Corasick, LeftmostLongest).
// Matching is exact and case-sensitive. Immutable after construction.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace replica {

struct AddedToken {
  std::string content;
  uint32_t id = 0;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  // Error for an empty or duplicated content.
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  struct Match {
    size_t pos;    // byte offset; text.size() when there is none
    size_t index;  // into tokens()
  };
  Match Find(std::string_view text, size_t from) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  bool empty() const { return tokens_.empty(); }

 private:
  std::vector<AddedToken> tokens_;
  // For each first byte, the tokens starting with it, longest first.
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
};

}  // namespace replica
