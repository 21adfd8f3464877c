// Pre-tokenisation: cuts text into the pieces that BPE encodes one by one, by matching a regex
// repeatedly from the current position (Hugging Face's Split pre-tokenizer). The regex runs in
// PCRE2 with PCRE2_UTF | PCRE2_UCP, JIT-compiled, so \p{L}, \p{N} are Unicode general categories.
// `\s` and `\S` are rewritten to Oniguruma's (and Python regex's) White_Space set, which Hugging
// Face tokenizers uses; PCRE2's own \s also contains U+180E.
// Immutable after construction; Next() is safe from many threads (per-thread match state).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace replica {

// The Hugging Face spelling of the cl100k_base split regex (dolma2's pre-tokenizer).
inline constexpr std::string_view kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-2's regex, used by a ByteLevel pre-tokenizer with use_regex = true.
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Rewrites \s and \S (outside character classes) and \s (inside them) to the explicit Unicode
// White_Space set: U+0009-000D, U+0020, U+0085, U+00A0, U+1680, U+2000-200A, U+2028, U+2029,
// U+202F, U+205F, U+3000. Other escapes, \Q..\E quoting and POSIX classes are copied unchanged.
std::string OnigurumaWhitespace(std::string_view pattern);

class Pretokenizer {
 public:
  // What happens to text the regex does not match: kKeep makes each gap a piece (behavior
  // "Isolated"); kDrop discards it (behavior "Removed" with invert = true).
  enum class Gaps { kKeep, kDrop };

  // Error naming the offset and PCRE2's reason when the pattern does not compile.
  explicit Pretokenizer(std::string_view pattern, Gaps gaps = Gaps::kKeep);
  ~Pretokenizer();
  Pretokenizer(Pretokenizer&&) noexcept;
  Pretokenizer& operator=(Pretokenizer&&) noexcept;

  // The next piece of `text` at or after *pos: sets *piece, advances *pos past it and returns
  // true; false at the end. `text` must be valid UTF-8 (checked by the caller) and each call must
  // pass the *pos the previous one left. Error if the regex engine gives up (resource limits).
  bool Next(std::string_view text, size_t* pos, std::string_view* piece) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const;

 private:
  struct Compiled;
  std::string pattern_;
  Gaps gaps_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace replica
