// The pre-tokenizer: the README's examples, Unicode classes, the Oniguruma \s rewrite, gaps, long
// runs. Expected pieces for the Unicode edge cases were produced with Python's `regex` module on the
// same pattern (the engine the dolma2 oracle's reference uses).
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/pretokenize.h"

namespace replica {
namespace {

std::vector<std::string> Pieces(const Pretokenizer& p, std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  std::string_view piece;
  while (p.Next(text, &pos, &piece)) out.emplace_back(piece);
  return out;
}

using V = std::vector<std::string>;

TEST(Pretokenize, Cl100kReadmeExamples) {
  Pretokenizer p(kCl100kPattern);
  EXPECT_TRUE(p.jit());
  EXPECT_EQ(Pieces(p, "x  y"), (V{"x", " ", " y"}));
  EXPECT_EQ(Pieces(p, "  hello world  "), (V{" ", " hello", " world", "  "}));
  EXPECT_EQ(Pieces(p, "1234567"), (V{"123", "456", "7"}));
  EXPECT_EQ(Pieces(p, "e\u0301t\u00e9"), (V{"e", "\u0301t\u00e9"}));  // marks are not letters
  EXPECT_EQ(Pieces(p, "I'LL 'Re it's"), (V{"I", "'LL", " '", "Re", " it", "'s"}));
  EXPECT_EQ(Pieces(p, "don\u2019t"), (V{"don", "\u2019t"}));  // curly apostrophe: no contraction
  EXPECT_EQ(Pieces(p, "a\n\nb"), (V{"a", "\n\n", "b"}));
  EXPECT_EQ(Pieces(p, "x = 1;\n"), (V{"x", " =", " ", "1", ";\n"}));
  EXPECT_EQ(Pieces(p, ""), V{});
}

TEST(Pretokenize, WhiteSpaceIsOnigurumas) {
  Pretokenizer p(kCl100kPattern);
  // Python regex: U+0085 is \s; U+180E and U+FEFF are not.
  EXPECT_EQ(Pieces(p, "k\u0085 x"), (V{"k", "\u0085", " x"}));
  EXPECT_EQ(Pieces(p, "a \u180e b"), (V{"a", " \u180e", " b"}));
  EXPECT_EQ(Pieces(p, "a\u180eb"), (V{"a", "\u180eb"}));
  EXPECT_EQ(Pieces(p, "a\ufeff b"), (V{"a", "\ufeff", " b"}));
  // Case-insensitive contractions fold like Python regex does (long s matches 's).
  EXPECT_EQ(Pieces(p, "x'\u017fx"), (V{"x", "'\u017f", "x"}));
}

TEST(Pretokenize, RewriteLeavesOtherSyntaxAlone) {
  EXPECT_EQ(OnigurumaWhitespace(R"(a\\s\Q\s\E[]\s][[:alpha:]\S])"),
            std::string(R"(a\\s\Q\s\E[]\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028})") +
                R"(\x{2029}\x{202F}\x{205F}\x{3000}][[:alpha:]\S])");
  EXPECT_EQ(OnigurumaWhitespace(R"(\S)"),
            R"([^\t-\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}])");
}

TEST(Pretokenize, GapsKeptOrDropped) {
  Pretokenizer keep("[0-9]+", Pretokenizer::Gaps::kKeep);
  EXPECT_EQ(Pieces(keep, "ab12cd3"), (V{"ab", "12", "cd", "3"}));
  Pretokenizer drop("[0-9]+", Pretokenizer::Gaps::kDrop);
  EXPECT_EQ(Pieces(drop, "ab12cd3e"), (V{"12", "3"}));
  Pretokenizer empty_matches("x*", Pretokenizer::Gaps::kKeep);  // empty matches are no pieces
  EXPECT_EQ(Pieces(empty_matches, "abxxc"), (V{"ab", "xx", "c"}));
}

TEST(Pretokenize, LongRunsDoNotExhaustTheEngine) {
  Pretokenizer p(kCl100kPattern);
  std::string spaces(2000000, ' ');
  EXPECT_EQ(Pieces(p, spaces + "x"), (V{std::string(1999999, ' '), " x"}));
  std::string letters(2000000, 'q');
  EXPECT_EQ(Pieces(p, letters).size(), 1u);
}

TEST(Pretokenize, BadPatternIsAnError) {
  EXPECT_THROW(Pretokenizer("(unclosed"), Error);
}

}  // namespace
}  // namespace replica
