// OLMo-core's token files (docs/design.md §4): raw, headerless, little-endian arrays of token ids
// (uint32, or uint16 for vocabularies up to 65536), documents concatenated with EOS. Files are
// memory-mapped; opening one checks that its size is a whole number of tokens and, when a
// vocabulary size is given, that every id is below it (one pass at open time, so a bad id is
// reported with its file and offset before training starts rather than mid-run).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/mmap.h"

namespace replica::data {

enum class TokenDtype { kUint16, kUint32 };

size_t DtypeSize(TokenDtype dtype);
std::string_view DtypeName(TokenDtype dtype);     // "uint16" / "uint32"
TokenDtype ParseDtype(std::string_view name);     // Error naming the value otherwise

class TokenFile {
 public:
  // Errors name the path: missing or unreadable file, size not a multiple of the dtype size, an
  // id >= vocab_size (with its token offset). vocab_size must be in [1, 2^31] so ids fit int32.
  static TokenFile Open(const std::string& path, TokenDtype dtype, uint64_t vocab_size);

  const std::string& path() const { return file_.path(); }
  TokenDtype dtype() const { return dtype_; }
  uint64_t num_tokens() const { return file_.size() / DtypeSize(dtype_); }
  uint64_t size_bytes() const { return file_.size(); }
  // XXH3-64 of the file's bytes, computed at open (part of dataset fingerprints).
  uint64_t content_hash() const { return content_hash_; }

  // Copies tokens [offset, offset + count) into out as int32 (the model's token type).
  void Read(uint64_t offset, uint64_t count, int32_t* out) const;

 private:
  MappedFile file_;
  TokenDtype dtype_ = TokenDtype::kUint32;
  uint64_t content_hash_ = 0;
};

}  // namespace replica::data
