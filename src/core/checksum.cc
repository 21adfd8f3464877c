#include "core/checksum.h"

#include <openssl/evp.h>
#include <xxhash.h>

#include "core/error.h"
#include "core/mmap.h"

namespace replica {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  if (!impl_->ctx || EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr) != 1)
    Fail("sha256: OpenSSL initialisation failed");
}

Sha256::~Sha256() {
  if (impl_ && impl_->ctx) EVP_MD_CTX_free(impl_->ctx);
}

void Sha256::Update(const void* data, size_t size) {
  if (size) EVP_DigestUpdate(impl_->ctx, data, size);
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

std::string Sha256Hex(const void* data, size_t size) {
  Sha256 h;
  h.Update(data, size);
  return h.HexDigest();
}
std::string Sha256Hex(std::string_view s) { return Sha256Hex(s.data(), s.size()); }

std::string Sha256FileHex(const std::string& path) {
  MappedFile f = MappedFile::Open(path);
  return Sha256Hex(f.data(), f.size());
}

uint64_t Xxh3_64(const void* data, size_t size, uint64_t seed) {
  return XXH3_64bits_withSeed(data, size, seed);
}

}  // namespace replica
