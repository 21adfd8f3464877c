#include "tokenizer/tokenizer_added.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/error.h"

namespace replica {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::set<std::string_view> seen;
  for (uint32_t i = 0; i < tokens_.size(); ++i) {
    const std::string& c = tokens_[i].content;
    Require(!c.empty(), "added token {} (id {}) has empty content", i, tokens_[i].id);
    Require(seen.insert(c).second, "added token '{}' is given twice", c);
    by_first_byte_[static_cast<uint8_t>(c[0])].push_back(i);
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
}

AddedTokenMatcher::Match AddedTokenMatcher::Find(std::string_view text, size_t from) const {
  if (tokens_.empty()) return {text.size(), 0};
  for (size_t i = from; i < text.size(); ++i) {
    const auto& candidates = by_first_byte_[static_cast<uint8_t>(text[i])];
    for (uint32_t k : candidates) {
      const std::string& c = tokens_[k].content;
      if (c.size() <= text.size() - i && std::memcmp(text.data() + i, c.data(), c.size()) == 0) {
        return {i, k};
      }
    }
  }
  return {text.size(), 0};
}

}  // namespace replica
