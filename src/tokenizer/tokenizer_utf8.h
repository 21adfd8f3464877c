// UTF-8 validation for tokenizer input. The tokenizer refuses invalid UTF-8 (as Hugging Face
// tokenizers does: its input is a Rust String) instead of guessing a repair, so every text it
// encodes decodes back to the same bytes. Validation runs once per text; the regex then matches
// with PCRE2_NO_UTF_CHECK, which is only safe on validated input.
#pragma once
#include <cstddef>
#include <string_view>

namespace replica {

// Byte offset of the first byte that starts an invalid sequence (overlong forms, surrogates,
// code points above U+10FFFF, stray continuation bytes, truncated sequences), or npos when `s`
// is well-formed UTF-8.
size_t FindInvalidUtf8(std::string_view s);

// Throws Error("<what>: invalid UTF-8 at byte N (bytes XX XX ..)") unless `s` is valid.
void RequireValidUtf8(std::string_view s, std::string_view what);

}  // namespace replica
