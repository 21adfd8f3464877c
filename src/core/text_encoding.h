// Telling UTF-8 text from text in another encoding before a parser reads it: a config saved as
// UTF-16 (Windows editors, PowerShell's `>`) would otherwise read as YAML of odd characters or fail
// with a JSON syntax error at column 1.
#pragma once
#include <string>
#include <string_view>

namespace replica {

// "" when `text` may be UTF-8 text (no UTF-16/UTF-32 byte-order mark, no NUL byte); else what it
// is instead, for a message: "UTF-16 (little-endian: it starts with the byte-order mark FF FE)",
// "holds NUL bytes (the first at byte 1): UTF-16 or UTF-32 text without a byte-order mark, or not
// text at all".
std::string NotUtf8Text(std::string_view text);

// Error "<path>: <NotUtf8Text>; replica reads <what> as UTF-8 ..." unless the text may be UTF-8.
void RequireUtf8Text(std::string_view text, const std::string& path, const std::string& what);

}  // namespace replica
