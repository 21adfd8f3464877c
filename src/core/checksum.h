// Digests: SHA-256 (OpenSSL EVP) where a value is compared with other tools (manifests, data-order
// oracles, rank file), XXH3-64 where only replica reads it back and speed matters.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace replica {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  void Update(const void* data, size_t size);
  void Update(std::string_view s) { Update(s.data(), s.size()); }
  std::string HexDigest();  // finalises; call once

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::string Sha256Hex(const void* data, size_t size);
std::string Sha256Hex(std::string_view s);
std::string Sha256FileHex(const std::string& path);  // Error naming the path if unreadable
uint64_t Xxh3_64(const void* data, size_t size, uint64_t seed = 0);

}  // namespace replica
