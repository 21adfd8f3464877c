// Writes a rank-based byte-level BPE tokenizer (dolma2: cl100k_base ranks, id == rank, plus its
// added tokens) as the Hugging Face files transformers loads with AutoTokenizer: tokenizer.json
// (BPE vocab + merges, Split(regex) + ByteLevel pre-tokenizer, ByteLevel decoder, added tokens),
// tokenizer_config.json and special_tokens_map.json.
//
// Merges come from the ranks as Hugging Face's tiktoken conversion derives them: for each token
// of 2+ bytes, BPE over its bytes using only tokens of lower rank ends in exactly two parts, and
// (left, right) is its merge, listed in rank order (a token for which it does not is left without
// a merge); `ignore_merges` is set (tiktoken's whole-piece shortcut). LoadHfTokenizerJson of the
// result encodes the oracle texts as the original does (tested).
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace replica {

nlohmann::ordered_json HfTokenizerJson(const Tokenizer& tokenizer);

// Writes the three files into `dir` (atomically, each); returns their names. model_max_length goes
// into tokenizer_config.json.
std::vector<std::string> WriteHfTokenizerFiles(const Tokenizer& tokenizer, const std::string& dir,
                                               int64_t model_max_length);

}  // namespace replica
