// Encodes many texts at once on all OpenMP threads: texts are shared out dynamically, and a long
// text is cut with Tokenizer::SplitForParallelEncode so one big document still uses every core.
// The result is exactly {tokenizer.Encode(text) for each text}, for any thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace replica {

// ids[i] = the encoding of texts[i]. If any text fails (invalid UTF-8), throws the Error of the
// lowest such i, prefixed by where(i) (default "text #i").
std::vector<std::vector<uint32_t>> EncodeBatch(
    const Tokenizer& tokenizer, std::span<const std::string_view> texts,
    size_t chunk_bytes = 1u << 20, const std::function<std::string(size_t)>& where = nullptr);


}  // namespace replica
