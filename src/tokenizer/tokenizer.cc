#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizer/tokenizer_utf8.h"

namespace replica {

Tokenizer::Tokenizer(TokenizerInfo info, BpeModel bpe, Pretokenizer pretokenizer,
                     std::vector<AddedToken> added)
    : info_(std::move(info)),
      bpe_(std::move(bpe)),
      pretokenizer_(std::move(pretokenizer)),
      added_(std::move(added)) {
  vocab_size_ = bpe_.id_limit();
  for (const AddedToken& t : added_.tokens()) {
    Require(t.id < 0xFFFFFFFFu, "added token '{}': id {} out of range", t.content, t.id);
    vocab_size_ = std::max(vocab_size_, t.id + 1);
  }
  added_by_id_.assign(vocab_size_, -1);
  for (size_t i = 0; i < added_.tokens().size(); ++i) {
    const AddedToken& t = added_.tokens()[i];
    // The earlier token's name is looked up only when there is one (the message's arguments are
    // evaluated even when the check passes).
    if (const int32_t earlier = added_by_id_[t.id]; earlier >= 0) {
      Fail("added tokens '{}' and '{}' share id {}", added_.tokens()[earlier].content, t.content,
           t.id);
    }
    // An added token may reuse a BPE id (GPT-2's <|endoftext|>) only if it means the same bytes.
    Require(!bpe_.Has(t.id) || bpe_.TokenBytes(t.id) == t.content,
            "added token '{}' has id {}, which the BPE vocabulary uses for other text", t.content,
            t.id);
    added_by_id_[t.id] = static_cast<int32_t>(i);
  }
  for (auto [what, id] : {std::pair{"eos", info_.eos_id}, std::pair{"pad", info_.pad_id}}) {
    Require(!id || *id < vocab_size_, "{} id {} is outside the vocabulary (size {})", what,
            id.value_or(0), vocab_size_);
  }
}

void Tokenizer::EncodeSegment(std::string_view segment, std::vector<uint32_t>* out) const {
  size_t pos = 0;
  std::string_view piece;
  while (pretokenizer_.Next(segment, &pos, &piece)) bpe_.EncodePiece(piece, out);
}

void Tokenizer::Encode(std::string_view text, std::vector<uint32_t>* out) const {
  RequireValidUtf8(text, "tokenizer input");
  size_t pos = 0;
  while (pos < text.size()) {
    AddedTokenMatcher::Match m = added_.Find(text, pos);
    if (m.pos > pos) EncodeSegment(text.substr(pos, m.pos - pos), out);
    if (m.pos == text.size()) break;
    const AddedToken& t = added_.tokens()[m.index];
    out->push_back(t.id);
    pos = m.pos + t.content.size();
  }
}

std::vector<uint32_t> Tokenizer::Encode(std::string_view text) const {
  std::vector<uint32_t> ids;
  Encode(text, &ids);
  return ids;
}

void Tokenizer::EncodeOrdinary(std::string_view text, std::vector<uint32_t>* out) const {
  RequireValidUtf8(text, "tokenizer input");
  EncodeSegment(text, out);
}

// Why a cut between '\n' and a letter is safe for the cl100k pattern
//   (?i:'s|..|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ |
//   \s+(?!\S) | \s+
// No alternative matches a '\n' followed by a letter: letter runs cannot take a '\n' prefix, the
// punctuation alternative takes only [\r\n]* after its run, the others are digits or whitespace. So
// the cut is a piece boundary. The pattern has no lookbehind, so matching from the cut is the same
// with or without the text before it. Before the cut, an attempt that reaches the cut has consumed
// the '\n'; greedy runs stop there whether a letter or the end of the text follows, and the only
// test that sees the difference is (?!\S) of \s+(?!\S). That alternative is reached only if
// \s*[\r\n]+ failed at the same start, which is impossible for a whitespace run containing the
// '\n'. Added tokens contain no '\n', so none spans the cut either.
std::vector<std::string_view> Tokenizer::SplitForParallelEncode(std::string_view text,
                                                                size_t target_bytes) const {
  std::vector<std::string_view> chunks;
  const bool safe = pretokenizer_.pattern() == kCl100kPattern;
  for (const AddedToken& t : added_.tokens()) {
    if (t.content.find('\n') != std::string::npos) return {text};
  }
  size_t start = 0;
  target_bytes = std::max<size_t>(target_bytes, 1);
  while (safe && text.size() - start > target_bytes) {
    size_t cut = std::string_view::npos;
    for (size_t nl = text.find('\n', start + target_bytes - 1); nl != std::string_view::npos;
         nl = text.find('\n', nl + 1)) {
      if (nl + 1 < text.size()) {
        char c = text[nl + 1];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
          cut = nl + 1;
          break;
        }
      }
    }
    if (cut == std::string_view::npos) break;
    chunks.push_back(text.substr(start, cut - start));
    start = cut;
  }
  chunks.push_back(text.substr(start));
  return chunks;
}

std::string_view Tokenizer::TokenBytes(uint32_t id) const {
  Require(id < vocab_size_, "token id {} is outside the vocabulary (size {})", id, vocab_size_);
  if (added_by_id_[id] >= 0) return added_.tokens()[added_by_id_[id]].content;
  Require(bpe_.Has(id), "token id {} is not assigned in this vocabulary", id);
  return bpe_.TokenBytes(id);
}

std::string Tokenizer::Decode(std::span<const uint32_t> ids) const {
  std::string text;
  for (uint32_t id : ids) text += TokenBytes(id);
  return text;
}

}  // namespace replica
