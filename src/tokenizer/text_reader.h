// Sequential reader for tokenizer input files: plain, gzip or zstd, recognised by their magic
// bytes (a ".gz"/".zst" name whose contents are something else is an Error). Yields lines or the
// whole remaining text, hashes the raw (compressed) file bytes as it goes, and reports progress in
// raw bytes. Corrupt or truncated streams are an Error naming the file; nothing is guessed.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "core/checksum.h"

namespace replica {

enum class Compression { kNone, kGzip, kZstd };
std::string_view CompressionName(Compression c);

class TextReader {
 public:
  // "-" reads standard input. Error if missing or unreadable.
  explicit TextReader(const std::string& path);
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;

  // Next line without its '\n' (a '\r' before it is kept); false at the end of the file. A last
  // line without '\n' is still a line.
  bool ReadLine(std::string* line);
  // Everything not read yet.
  std::string ReadAll();

  const std::string& path() const { return path_; }
  Compression compression() const { return compression_; }
  uint64_t raw_size() const { return raw_size_; }  // 0 when unknown (stdin, pipes)
  uint64_t raw_bytes_read() const { return raw_read_; }
  // sha256 of the raw file; call after reading to the end (finishes the hash).
  std::string RawSha256Hex();

 private:
  // Appends decompressed bytes to buffer_; false when the file is exhausted.
  bool Fill();
  size_t ReadRaw();

  std::string path_;
  std::FILE* file_ = nullptr;
  Compression compression_ = Compression::kNone;
  uint64_t raw_size_ = 0, raw_read_ = 0;
  Sha256 sha_;
  std::string raw_;       // raw bytes read but not yet decompressed: raw_[raw_pos_, raw_len_)
  size_t raw_pos_ = 0, raw_len_ = 0;
  // Makes room for `room` more bytes at buf_[end_], moving unread bytes to the front first.
  void Reserve(size_t room);
  // Decompressed bytes not yet returned: buf_[begin_, end_). Not zero-filled and reused across
  // fills, so reading costs no page faults or memsets beyond the first buffer.
  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0, begin_ = 0, end_ = 0;
  bool eof_ = false;      // raw file fully read
  bool stream_done_ = true;  // the current gzip member / zstd frame is complete
  struct Codec;
  std::unique_ptr<Codec> codec_;
};

// Reads the whole (decompressed) file; Error naming the path on failure.
std::string ReadTextFile(const std::string& path);

}  // namespace replica
