#include "data/token_files.h"

#include <cstring>

#include "core/checksum.h"
#include "core/error.h"

namespace replica::data {
namespace {

// Ids are stored little-endian; replica only builds on little-endian hosts (see data_order.cc),
// so a memcpy into a native integer is the decode.
template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Index of the first id >= limit, or count when all are below it. The max pass is branch-free
// and vectorises; the exact position is only searched for on failure.
template <typename T>
uint64_t FirstIdAtOrAbove(const uint8_t* data, uint64_t count, uint64_t limit) {
  constexpr uint64_t kChunk = 1 << 16;
  for (uint64_t start = 0; start < count; start += kChunk) {
    uint64_t end = std::min(count, start + kChunk);
    T max = 0;
    for (uint64_t i = start; i < end; ++i) {
      T v = Load<T>(data + i * sizeof(T));
      max = v > max ? v : max;
    }
    if (max >= limit) {
      for (uint64_t i = start; i < end; ++i)
        if (Load<T>(data + i * sizeof(T)) >= limit) return i;
    }
  }
  return count;
}

}  // namespace

size_t DtypeSize(TokenDtype dtype) { return dtype == TokenDtype::kUint16 ? 2 : 4; }

std::string_view DtypeName(TokenDtype dtype) {
  return dtype == TokenDtype::kUint16 ? "uint16" : "uint32";
}

TokenDtype ParseDtype(std::string_view name) {
  if (name == "uint32") return TokenDtype::kUint32;
  if (name == "uint16") return TokenDtype::kUint16;
  Fail("token dtype '{}': expected uint32 or uint16", name);
}

TokenFile TokenFile::Open(const std::string& path, TokenDtype dtype, uint64_t vocab_size) {
  TokenFile f;
  f.file_ = MappedFile::Open(path);
  f.dtype_ = dtype;
  size_t item = DtypeSize(dtype);
  Require(f.file_.size() % item == 0,
          "{}: size {} bytes is not a multiple of {} ({} token ids); wrong --dtype or a "
          "truncated file?",
          path, f.file_.size(), item, DtypeName(dtype));
  Require(vocab_size > 0 && vocab_size <= (uint64_t{1} << 31),
          "{}: vocabulary size {} out of range; expected 1..2^31", path, vocab_size);
  {
    uint64_t n = f.num_tokens();
    uint64_t bad = dtype == TokenDtype::kUint16
                       ? FirstIdAtOrAbove<uint16_t>(f.file_.data(), n, vocab_size)
                       : FirstIdAtOrAbove<uint32_t>(f.file_.data(), n, vocab_size);
    if (bad < n) {
      uint64_t id = dtype == TokenDtype::kUint16 ? Load<uint16_t>(f.file_.data() + bad * 2)
                                                 : Load<uint32_t>(f.file_.data() + bad * 4);
      Fail("{}: token id {} at token offset {} is >= the vocabulary size {}", path, id, bad,
           vocab_size);
    }
  }
  f.content_hash_ = Xxh3_64(f.file_.data(), f.file_.size());
  return f;
}

void TokenFile::Read(uint64_t offset, uint64_t count, int32_t* out) const {
  Require(offset <= num_tokens() && count <= num_tokens() - offset,
          "{}: read of tokens [{}, {}) past the end ({} tokens)", path(), offset, offset + count,
          num_tokens());
  const uint8_t* p = file_.data() + offset * DtypeSize(dtype_);
  if (dtype_ == TokenDtype::kUint16) {
    for (uint64_t i = 0; i < count; ++i) out[i] = Load<uint16_t>(p + 2 * i);
  } else {
    for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(Load<uint32_t>(p + 4 * i));
  }
}

}  // namespace replica::data
