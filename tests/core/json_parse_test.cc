// ParseJson / JsonErrorMessage: a JSON error names the file, the line and column of the fault and
// what is wrong, without the JSON library's own prefix; a number beyond double's range is pointed
// at where it stands.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/json_parse.h"
#include "testing/util.h"

namespace replica {
namespace {

std::string ErrorFor(const std::string& text, const std::string& where = "c.json") {
  return test::ErrorOf([&] { ParseJson(text, where); });
}

TEST(JsonParse, ValidTextParses) {
  EXPECT_EQ(ParseJson("{\"a\": [1, 2.5]}", "c.json")["a"][1].get<double>(), 2.5);
}

TEST(JsonParse, ASyntaxErrorNamesFileLineAndColumn) {
  const std::string e = ErrorFor("{\n  \"a\": 1,\n  \"b\": }\n");
  EXPECT_EQ(e.rfind("c.json:3:8: not valid JSON: syntax error while parsing value", 0), 0u) << e;
  EXPECT_EQ(e.find("json.exception"), std::string::npos) << e;
  EXPECT_EQ(e.find("parse error at line"), std::string::npos) << e;
}

TEST(JsonParse, TruncatedTextPointsAtItsEnd) {
  const std::string e = ErrorFor("{\n  \"a\": [1,\n");
  EXPECT_EQ(e.rfind("c.json:3:1: not valid JSON: ", 0), 0u) << e;
  EXPECT_NE(e.find("unexpected end of input"), std::string::npos) << e;
}

TEST(JsonParse, ANumberBeyondDoubleIsPointedAt) {
  // 1e40 also appears first inside a longer number that is fine (1e40 in 1e400 would not be).
  const std::string e = ErrorFor("{\n  \"ok\": 21e40,\n  \"lr\": 1e400\n}\n");
  EXPECT_EQ(e, "c.json:3:9: not valid JSON: the number 1e400 is beyond the range of a double "
               "(about ±1.8e308)");
  const std::string neg = ErrorFor("[-2e999]");
  EXPECT_EQ(neg, "c.json: not valid JSON at column 2: the number -2e999 is beyond the range of a "
                 "double (about ±1.8e308)");
}

TEST(JsonParse, OneLineTextGivesTheColumnOnly) {
  const std::string e = ErrorFor("{\"id\": \"b\", \"text\": }", "set.jsonl:2");
  EXPECT_EQ(e.rfind("set.jsonl:2: not valid JSON at column 21: syntax error", 0), 0u) << e;
}

}  // namespace
}  // namespace replica
