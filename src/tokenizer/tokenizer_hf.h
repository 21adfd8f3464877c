// Loads a Hugging Face tokenizer.json that describes a byte-level BPE, so users can bring other
// tokenizers than dolma2. Supported: model.type "BPE" (vocab + merges, "a b" strings or [a, b]
// pairs; ignore_merges = whole-piece lookup first), no normalizer, and a pre_tokenizer that is
// either ByteLevel(use_regex = true) (GPT-2 regex) or Sequence[Split(Regex, "Isolated" or
// "Removed" + invert), ByteLevel(use_regex = false)]; added_tokens matched literally. Anything else
// (normalizers, prefix spaces, dropout, byte fallback, lstrip/rstrip) is refused with an Error
// naming the field rather than silently tokenising differently. Post-processors (BOS/EOS
// templates) are ignored: replica never adds special tokens while encoding.
#pragma once
#include <string>

#include "tokenizer/tokenizer.h"

namespace replica {

// EOS is the added token "<|endoftext|>", "</s>", "<|end_of_text|>" or "<eos>" (the first present),
// PAD is "<|pad|>", "<pad>" or "[PAD]"; either may be absent.
Tokenizer LoadHfTokenizerJson(const std::string& path);

// GPT-2's byte <-> printable character table (bytes_to_unicode): what tokenizer.json vocabularies
// are spelled in. Returns the code point of byte b.
uint32_t ByteLevelCodePoint(uint8_t b);

}  // namespace replica
