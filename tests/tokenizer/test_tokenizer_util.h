// Shared helpers for the tokenizer tests: the dolma2 tokenizer loaded once per test binary from the
// repository's data/ folder.
#pragma once
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_dolma2.h"

namespace replica::testing {

inline const Tokenizer& Dolma2() {
  static const Tokenizer tokenizer =
      LoadDolma2Tokenizer(std::string(REPLICA_SOURCE_DIR) + "/data/cl100k_base.tiktoken");
  return tokenizer;
}

}  // namespace replica::testing
