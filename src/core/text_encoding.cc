#include "core/text_encoding.h"

#include <fmt/format.h>

#include "core/error.h"

namespace replica {

std::string NotUtf8Text(std::string_view text) {
  auto starts = [&](std::string_view bom) { return text.substr(0, bom.size()) == bom; };
  using namespace std::string_view_literals;
  // UTF-32 first: its little-endian mark begins with UTF-16's.
  if (starts("\xFF\xFE\x00\x00"sv))
    return "UTF-32 (little-endian: it starts with the byte-order mark FF FE 00 00)";
  if (starts("\x00\x00\xFE\xFF"sv))
    return "UTF-32 (big-endian: it starts with the byte-order mark 00 00 FE FF)";
  if (starts("\xFF\xFE"sv))
    return "UTF-16 (little-endian: it starts with the byte-order mark FF FE)";
  if (starts("\xFE\xFF"sv)) return "UTF-16 (big-endian: it starts with the byte-order mark FE FF)";
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    return fmt::format("holds NUL bytes (the first at byte {}): UTF-16 or UTF-32 text without a "
                       "byte-order mark, or not text at all",
                       nul);
  return "";
}

void RequireUtf8Text(std::string_view text, const std::string& path, const std::string& what) {
  const std::string reason = NotUtf8Text(text);
  if (reason.empty()) return;
  const bool nul = reason.rfind("holds", 0) == 0;
  const std::string from = nul ? "" : "-f " + reason.substr(0, reason.find(' ')) + " ";
  Fail("{}: the file {}{}; replica reads {} as UTF-8 (convert it, e.g. iconv {}-t UTF-8 {} > "
       "{}.utf8)",
       path, nul ? "" : "is ", reason, what, from, path, path);
}

}  // namespace replica
