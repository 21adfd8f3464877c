#include "tokenizer/tokenizer_utf8.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "core/error.h"

namespace replica {

size_t FindInvalidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // Most text is ASCII: skip eight bytes at a time while no high bit is set.
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    const uint8_t c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Table 3-7 of the Unicode standard (well-formed UTF-8 byte sequences).
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c == 0xE0) {
      len = 3, lo = 0xA0;
    } else if (c == 0xED) {
      len = 3, hi = 0x9F;  // no surrogates
    } else if (c >= 0xE1 && c <= 0xEF) {
      len = 3;
    } else if (c == 0xF0) {
      len = 4, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      len = 4;
    } else if (c == 0xF4) {
      len = 4, hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

void RequireValidUtf8(std::string_view s, std::string_view what) {
  size_t at = FindInvalidUtf8(s);
  if (at == std::string_view::npos) return;
  std::string bytes;
  for (size_t k = at; k < s.size() && k < at + 4; ++k) {
    bytes += fmt::format("{}{:02X}", bytes.empty() ? "" : " ", static_cast<uint8_t>(s[k]));
  }
  Fail("{}: invalid UTF-8 at byte {} (bytes {}); the tokenizer accepts only valid UTF-8 text", what,
       at, bytes);
}

}  // namespace replica
