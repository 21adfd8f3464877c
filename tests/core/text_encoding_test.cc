// NotUtf8Text: a file in UTF-16 or UTF-32 (with or without a byte-order mark) is told apart from
// UTF-8 text before a parser reads it; UTF-8 text, its byte-order mark included, is not refused.
#include <gtest/gtest.h>

#include <string>

#include "core/text_encoding.h"
#include "testing/util.h"

namespace replica {
namespace {

using namespace std::string_literals;

TEST(TextEncoding, Utf8TextPasses) {
  EXPECT_EQ(NotUtf8Text("model:\n  vocab_size: 256\n"), "");
  EXPECT_EQ(NotUtf8Text("\xEF\xBB\xBF{\"a\": \"h\xC3\xA9llo\"}"), "");
  EXPECT_EQ(NotUtf8Text(""), "");
}

TEST(TextEncoding, ByteOrderMarksAreNamed) {
  EXPECT_EQ(NotUtf8Text("\xFF\xFE" "m\0o\0"s).rfind("UTF-16 (little-endian", 0), 0u);
  EXPECT_EQ(NotUtf8Text("\xFE\xFF\0m\0o"s).rfind("UTF-16 (big-endian", 0), 0u);
  EXPECT_EQ(NotUtf8Text("\xFF\xFE\0\0m\0\0\0"s).rfind("UTF-32 (little-endian", 0), 0u);
  EXPECT_EQ(NotUtf8Text("\0\0\xFE\xFF\0\0\0m"s).rfind("UTF-32 (big-endian", 0), 0u);
}

TEST(TextEncoding, NulBytesWithoutAMarkAreNamedWithTheFirstOffset) {
  EXPECT_EQ(NotUtf8Text("m\0o\0d\0"s).rfind("holds NUL bytes (the first at byte 1)", 0), 0u);
}

TEST(TextEncoding, RequireNamesTheFileAndTheConversion) {
  const std::string e =
      test::ErrorOf([] { RequireUtf8Text("\xFF\xFEm\0"s, "run.yaml", "config files"); });
  EXPECT_EQ(e.rfind("run.yaml: the file is UTF-16 (little-endian: it starts with the byte-order "
                    "mark FF FE); replica reads config files as UTF-8 (convert it, e.g. iconv -f "
                    "UTF-16 -t UTF-8 run.yaml > run.yaml.utf8)",
                    0),
            0u)
      << e;
}

}  // namespace
}  // namespace replica
