#include "fuzz_util.h"

#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace replica::fuzz {

std::string WriteTempFile(const uint8_t* data, size_t size, const std::string& suffix) {
  static const std::string dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
  const std::string path =
      dir + "/replica-fuzz-" + std::to_string(::getpid()) + "-input" + suffix;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("fuzz: cannot write " + path);
  if (size > 0 && std::fwrite(data, 1, size, f) != size) throw std::runtime_error("fuzz: short write");
  std::fclose(f);
  return path;
}

std::string Gzip(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("fuzz: deflateInit2");
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("fuzz: deflate");
  out.resize(z.total_out);
  return out;
}

std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 1);
  if (ZSTD_isError(n)) throw std::runtime_error("fuzz: ZSTD_compress");
  out.resize(n);
  return out;
}

}  // namespace replica::fuzz
