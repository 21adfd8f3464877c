// BpeModel: the flat merge loop and the heap agree, the whole-piece shortcut is exact for cl100k,
// and the tables behave.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "tokenizer/bpe.h"
#include "test_tokenizer_util.h"

namespace replica {
namespace {

using testing::Dolma2;

TEST(Bpe, EveryCl100kTokenMergesBackToItself) {
  // What makes tiktoken's whole-piece shortcut exact (oracle README, step 3).
  const BpeModel& bpe = Dolma2().bpe();
  std::vector<uint32_t> out;
  size_t mismatches = 0;
  for (uint32_t id = 0; id < bpe.id_limit(); ++id) {
    out.clear();
    bpe.EncodePieceByLoop(bpe.TokenBytes(id), &out);
    if (out != std::vector<uint32_t>{id}) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(Bpe, LoopAndHeapAgreeOnRandomPieces) {
  const BpeModel& bpe = Dolma2().bpe();
  std::mt19937 rng(7);
  const std::string alphabet = "aaabbcdeeeefghilmnnoorsstttu  ..,xyz\xC3\xA9";
  std::vector<uint32_t> a, b;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string piece;
    size_t len = 1 + rng() % 120;
    for (size_t k = 0; k < len; ++k) piece += alphabet[rng() % alphabet.size()];
    a.clear();
    b.clear();
    bpe.EncodePieceByLoop(piece, &a);
    bpe.EncodePieceByHeap(piece, &b);
    ASSERT_EQ(a, b) << piece;
    std::string back;
    for (uint32_t id : a) back += bpe.TokenBytes(id);
    ASSERT_EQ(back, piece);
  }
}

TEST(Bpe, SmallRankTableSemantics) {
  // Ranks: single bytes a=0 b=1 c=2 (the other bytes fill 3..255), "ab"=256, "bc"=257,
  // "abc"=258.
  BpeModel m = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
    // Re-rank so that 'a','b','c' are 0,1,2 and every other byte follows.
    std::swap(tokens[0], tokens['a']);
    std::swap(tokens[1], tokens['b']);
    std::swap(tokens[2], tokens['c']);
    tokens.push_back("ab");
    tokens.push_back("bc");
    tokens.push_back("abc");
    return BpeModel::FromRanks(tokens, /*whole_piece_first=*/false);
  }();
  std::vector<uint32_t> out;
  m.EncodePiece("abc", &out);  // "ab" (256) beats "bc" (257), then "ab"+"c" = "abc" (258)
  EXPECT_EQ(out, (std::vector<uint32_t>{258}));
  out.clear();
  m.EncodePiece("bcab", &out);  // "ab" first, then "bc"; "bc"+"ab" is no token
  EXPECT_EQ(out, (std::vector<uint32_t>{257, 256}));
  // Pairs: (a,b) and (b,c), and "abc" is reachable as (ab,c) and as (a,bc).
  EXPECT_EQ(m.num_merges(), 4u);
}

TEST(Bpe, VocabularyErrors) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 255; ++b) tokens.emplace_back(1, static_cast<char>(b));
  EXPECT_THROW(BpeModel::FromRanks(tokens), Error);  // byte 0xFF missing
  tokens.emplace_back(1, '\xFF');
  tokens.emplace_back("a");  // duplicate bytes
  EXPECT_THROW(BpeModel::FromRanks(tokens), Error);
}

}  // namespace
}  // namespace replica
