// Reader for tiktoken rank files (e.g. OpenAI's cl100k_base.tiktoken): one line per token,
// "<base64 of the token's bytes> <rank>", ranks 0..n-1 in order. Errors name the file and line.
#pragma once
#include <string>
#include <vector>

namespace replica {

// Token bytes indexed by rank. `contents` is the file's text; `path` is used in messages only.
std::vector<std::string> ParseTiktokenRanks(const std::string& contents, const std::string& path);

}  // namespace replica
