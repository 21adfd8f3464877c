// dolma2 (Ai2's allenai/dolma2-tokenizer, used by OLMo 2 and Olmo 3): OpenAI's cl100k_base BPE ranks
// (id == rank, 0..100255) plus 22 added tokens at 100256..100277, pre-tokenised by the Hugging Face
// spelling of the cl100k regex. Exact definition: tests/data/oracles/tokenizer/README.md.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace replica {

inline constexpr uint32_t kDolma2EosId = 100257;  // <|endoftext|>
inline constexpr uint32_t kDolma2PadId = 100277;  // <|pad|>
inline constexpr uint32_t kDolma2VocabSize = 100278;
inline constexpr uint32_t kDolma2EmbeddingRows = 100352;  // 100278 rounded up to 128
// The rank file dolma2 needs (data/cl100k_base.tiktoken, 1,681,126 bytes).
inline constexpr std::string_view kCl100kRankFile = "cl100k_base.tiktoken";
inline constexpr std::string_view kCl100kSha256 =
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7";

std::vector<AddedToken> Dolma2AddedTokens();

// Loads dolma2 from a cl100k_base rank file. Error if the file's sha256 is not kCl100kSha256.
Tokenizer LoadDolma2Tokenizer(const std::string& rank_file_path);

}  // namespace replica
