#include "tokenizer/tokenizer_tiktoken.h"

#include <openssl/evp.h>

#include <charconv>
#include <string_view>

#include "core/error.h"

namespace replica {

std::vector<std::string> ParseTiktokenRanks(const std::string& contents, const std::string& path) {
  std::vector<std::string> tokens;
  std::string_view rest = contents;
  size_t line_no = 0;
  std::string buf;
  while (!rest.empty()) {
    ++line_no;
    size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    Require(sp != std::string_view::npos && sp > 0, "{}:{}: expected '<base64> <rank>'", path,
            line_no);
    std::string_view b64 = line.substr(0, sp), rank_text = line.substr(sp + 1);
    uint64_t rank = 0;
    auto [end, ec] = std::from_chars(rank_text.data(), rank_text.data() + rank_text.size(), rank);
    Require(ec == std::errc() && end == rank_text.data() + rank_text.size(),
            "{}:{}: rank '{}' is not a non-negative integer", path, line_no, rank_text);
    Require(rank == tokens.size(), "{}:{}: rank {} out of order (expected {})", path, line_no,
            rank, tokens.size());
    Require(b64.size() % 4 == 0, "{}:{}: base64 length {} is not a multiple of 4", path, line_no,
            b64.size());
    buf.resize(b64.size() / 4 * 3);
    int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(buf.data()),
                            reinterpret_cast<const unsigned char*>(b64.data()),
                            static_cast<int>(b64.size()));
    Require(n >= 0, "{}:{}: invalid base64 '{}'", path, line_no, b64);
    // EVP_DecodeBlock counts '=' padding as zero bytes.
    size_t len = static_cast<size_t>(n);
    for (size_t k = b64.size(); k > 0 && b64[k - 1] == '='; --k) --len;
    Require(len > 0, "{}:{}: empty token", path, line_no);
    tokens.emplace_back(buf.data(), len);
  }
  Require(!tokens.empty(), "{}: no ranks in file", path);
  return tokens;
}

}  // namespace replica
