#include "core/json_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "core/text_encoding.h"

namespace replica {
namespace {

// Line and column (both from 1) of byte `offset` of `text`.
std::pair<size_t, size_t> LineColumn(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

bool NumberChar(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
         c == '+' || c == '-';
}

// The offset of the first number token `token` in `text` (the parser stops at the first number
// it cannot hold, and an earlier copy of the same token would have stopped it there).
size_t NumberOffset(std::string_view text, std::string_view token) {
  for (size_t at = text.find(token); at != std::string_view::npos; at = text.find(token, at + 1)) {
    const bool starts = at == 0 || !NumberChar(text[at - 1]);
    const bool ends = at + token.size() == text.size() || !NumberChar(text[at + token.size()]);
    if (starts && ends) return at;
  }
  return text.size();
}

}  // namespace

std::string JsonErrorMessage(const std::string& where, std::string_view text,
                             const nlohmann::json::exception& e) {
  if (const std::string other = NotUtf8Text(text); !other.empty())
    return fmt::format("{}: not valid JSON: {} {}; JSON is read as UTF-8", where,
                       other.rfind("holds", 0) == 0 ? "the text" : "the text is", other);
  std::string what = e.what();
  size_t offset = text.size();
  if (const auto* p = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
    offset = p->byte > 0 ? p->byte - 1 : 0;
    // "[json.exception.parse_error.101] parse error at line 2, column 7: syntax error ..."
    if (const size_t colon = what.find(": ", what.find("parse error")); colon != std::string::npos)
      what = what.substr(colon + 2);
  } else if (e.id == 406) {  // out_of_range: "number overflow parsing '1e400'"
    const size_t q = what.find('\''), r = what.rfind('\'');
    const std::string token = q != std::string::npos && r > q ? what.substr(q + 1, r - q - 1) : "";
    offset = NumberOffset(text, token);
    what = fmt::format("the number {} is beyond the range of a double (about ±1.8e308)", token);
  } else if (const size_t close = what.find("] "); what.rfind("[json.exception.", 0) == 0 &&
                                                   close != std::string::npos) {
    what = what.substr(close + 2);
  }
  const auto [line, column] = LineColumn(text, offset);
  if (text.find('\n') == std::string_view::npos || text.find('\n') + 1 == text.size())
    return fmt::format("{}: not valid JSON at column {}: {}", where, column, what);
  return fmt::format("{}:{}:{}: not valid JSON: {}", where, line, column, what);
}

nlohmann::json ParseJson(std::string_view text, const std::string& where) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    Fail("{}", JsonErrorMessage(where, text, e));
  }
}

}  // namespace replica
