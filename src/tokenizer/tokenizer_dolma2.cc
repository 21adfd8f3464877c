#include "tokenizer/tokenizer_dolma2.h"

#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"
#include "tokenizer/tokenizer_tiktoken.h"

namespace replica {

std::vector<AddedToken> Dolma2AddedTokens() {
  std::vector<AddedToken> t = {
      {"<|extra_id_0|>", 100256},      {"<|endoftext|>", 100257},
      {"<|fim_prefix|>", 100258},      {"<|fim_middle|>", 100259},
      {"<|fim_suffix|>", 100260},      {"|||PHONE_NUMBER|||", 100261},
      {"|||EMAIL_ADDRESS|||", 100262}, {"|||IP_ADDRESS|||", 100263},
      {"<|im_start|>", 100264},        {"<|im_end|>", 100265},
  };
  for (uint32_t k = 1; k <= 10; ++k) t.push_back({fmt::format("<|extra_id_{}|>", k), 100265 + k});
  t.push_back({"<|endofprompt|>", 100276});
  t.push_back({"<|pad|>", 100277});
  return t;
}

Tokenizer LoadDolma2Tokenizer(const std::string& rank_file_path) {
  std::string contents = ReadFile(rank_file_path);
  std::string sha = Sha256Hex(contents);
  Require(sha == kCl100kSha256,
          "{}: sha256 is {}, expected {} (OpenAI's cl100k_base.tiktoken); the rank file is corrupt "
          "or a different file",
          rank_file_path, sha, kCl100kSha256);
  std::vector<std::string> ranks = ParseTiktokenRanks(contents, rank_file_path);
  Require(ranks.size() == 100256, "{}: {} ranks, expected 100256", rank_file_path, ranks.size());
  TokenizerInfo info{"dolma2", rank_file_path, sha, kDolma2EosId, kDolma2PadId};
  return Tokenizer(std::move(info), BpeModel::FromRanks(ranks, /*whole_piece_first=*/true),
                   Pretokenizer(kCl100kPattern), Dolma2AddedTokens());
}

}  // namespace replica
