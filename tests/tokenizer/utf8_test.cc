// UTF-8 validation: Unicode's table of well-formed byte sequences, including its edges.
#include <gtest/gtest.h>

#include "core/error.h"
#include "tokenizer/tokenizer_utf8.h"

namespace replica {
namespace {

constexpr size_t kOk = std::string_view::npos;

TEST(Utf8, AcceptsWellFormed) {
  for (std::string s : {"", "plain ascii text, long enough for the 8-byte path",
                        "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
                        "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "caf\xC3\xA9 \xF0\x9F\x98\x80"}) {
    EXPECT_EQ(FindInvalidUtf8(s), kOk) << s;
  }
}

TEST(Utf8, RejectsIllFormedAtTheRightOffset) {
  struct Case {
    std::string s;
    size_t at;
  };
  for (const Case& c : std::vector<Case>{{"ab\x80", 2},            // stray continuation
                                          {"\xC0\xAF", 0},          // overlong '/'
                                          {"\xC1\xBF", 0},          // overlong
                                          {"\xE0\x9F\xBF", 0},      // overlong 3-byte
                                          {"xx\xED\xA0\x80", 2},    // surrogate U+D800
                                          {"\xF0\x8F\xBF\xBF", 0},  // overlong 4-byte
                                          {"\xF4\x90\x80\x80", 0},  // above U+10FFFF
                                          {"\xF5\x80\x80\x80", 0},
                                          {"\xFF", 0},
                                          {"12345678\xC3", 8},      // truncated at the end
                                          {"\xE2\x82", 0},
                                          {"\xE2\x28\xA1", 0}}) {
    EXPECT_EQ(FindInvalidUtf8(c.s), c.at) << ::testing::PrintToString(c.s);
  }
  EXPECT_NO_THROW(RequireValidUtf8("ok", "x"));
  try {
    RequireValidUtf8("ab\xFF", "doc.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "doc.txt: invalid UTF-8 at byte 2 (bytes FF); the tokenizer accepts only valid "
                 "UTF-8 text");
  }
}

}  // namespace
}  // namespace replica
