#include "tokenizer/text_reader.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace replica {
namespace {

constexpr size_t kRawChunk = 1 << 20;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kZstd: return "zstd";
  }
  return "?";
}

struct TextReader::Codec {
  z_stream z{};
  bool z_init = false;
  ZSTD_DStream* zstd = nullptr;
  ~Codec() {
    if (z_init) inflateEnd(&z);
    if (zstd != nullptr) ZSTD_freeDStream(zstd);
  }
};

TextReader::TextReader(const std::string& path) : path_(path), codec_(std::make_unique<Codec>()) {
  std::error_code ec;
  if (path == "-") {
    file_ = stdin;
  } else {
    Require(std::filesystem::exists(path, ec), "{}: no such file", path);
    Require(!std::filesystem::is_directory(path, ec), "{}: is a directory, expected a file", path);
    file_ = std::fopen(path.c_str(), "rb");
    if (file_ == nullptr) Fail("{}: cannot open: {}", path, std::strerror(errno));
    raw_size_ = std::filesystem::file_size(path, ec);
    if (ec) raw_size_ = 0;
  }
  raw_.resize(kRawChunk);
  ReadRaw();
  const auto* m = reinterpret_cast<const uint8_t*>(raw_.data());
  if (raw_len_ >= 2 && m[0] == 0x1F && m[1] == 0x8B) {
    compression_ = Compression::kGzip;
  } else if (raw_len_ >= 4 && m[0] == 0x28 && m[1] == 0xB5 && m[2] == 0x2F && m[3] == 0xFD) {
    compression_ = Compression::kZstd;
  }
  Require(compression_ == Compression::kGzip || !EndsWith(path, ".gz"),
          "{}: named .gz but is not gzip data", path);
  Require(compression_ == Compression::kZstd || !(EndsWith(path, ".zst") || EndsWith(path, ".zstd")),
          "{}: named .zst but is not zstd data", path);
  if (compression_ == Compression::kGzip) {
    // 15 + 16: gzip wrapper only, full window.
    Require(inflateInit2(&codec_->z, 15 + 16) == Z_OK, "{}: cannot initialise zlib", path);
    codec_->z_init = true;
  } else if (compression_ == Compression::kZstd) {
    codec_->zstd = ZSTD_createDStream();
    Require(codec_->zstd != nullptr && !ZSTD_isError(ZSTD_initDStream(codec_->zstd)),
            "{}: cannot initialise zstd", path);
  }
}

TextReader::~TextReader() {
  if (file_ != nullptr && file_ != stdin) std::fclose(file_);
}

size_t TextReader::ReadRaw() {
  raw_pos_ = 0;
  raw_len_ = 0;
  if (eof_) return 0;
  raw_len_ = std::fread(raw_.data(), 1, raw_.size(), file_);
  if (raw_len_ < raw_.size()) {
    if (std::ferror(file_)) Fail("{}: read error: {}", path_, std::strerror(errno));
    eof_ = true;
  }
  sha_.Update(raw_.data(), raw_len_);
  raw_read_ += raw_len_;
  return raw_len_;
}

void TextReader::Reserve(size_t room) {
  if (end_ + room <= cap_) return;
  const size_t live = end_ - begin_;
  if (live + room <= cap_) {
    std::memmove(buf_.get(), buf_.get() + begin_, live);
  } else {
    size_t cap = std::max(cap_ * 2, live + room);
    auto bigger = std::make_unique_for_overwrite<char[]>(cap);
    if (live > 0) std::memcpy(bigger.get(), buf_.get() + begin_, live);
    buf_ = std::move(bigger);
    cap_ = cap;
  }
  begin_ = 0;
  end_ = live;
}

bool TextReader::Fill() {
  if (raw_pos_ == raw_len_ && ReadRaw() == 0) {
    Require(stream_done_, "{}: truncated {} stream ({} bytes)", path_,
            CompressionName(compression_), raw_read_);
    return false;
  }
  const char* in = raw_.data() + raw_pos_;
  size_t avail = raw_len_ - raw_pos_;
  if (compression_ == Compression::kNone) {
    Reserve(avail);
    std::memcpy(buf_.get() + end_, in, avail);
    end_ += avail;
    raw_pos_ = raw_len_;
    return true;
  }
  const size_t room = 4 * kRawChunk;
  Reserve(room);
  char* out = buf_.get() + end_;
  size_t produced = 0, consumed = 0;
  if (compression_ == Compression::kGzip) {
    z_stream& z = codec_->z;
    if (stream_done_) {
      // A new gzip member (files may concatenate several).
      Require(inflateReset(&z) == Z_OK, "{}: zlib reset failed", path_);
      stream_done_ = false;
    }
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in));
    z.avail_in = static_cast<uInt>(avail);
    z.next_out = reinterpret_cast<Bytef*>(out);
    z.avail_out = static_cast<uInt>(room);
    int rc = inflate(&z, Z_NO_FLUSH);
    Require(rc == Z_OK || rc == Z_STREAM_END || rc == Z_BUF_ERROR,
            "{}: corrupt gzip data near compressed byte {}: {}", path_,
            raw_read_ - raw_len_ + raw_pos_, z.msg != nullptr ? z.msg : "zlib error");
    if (rc == Z_STREAM_END) stream_done_ = true;
    produced = room - z.avail_out;
    consumed = avail - z.avail_in;
  } else {
    ZSTD_inBuffer zin{in, avail, 0};
    ZSTD_outBuffer zout{out, room, 0};
    size_t rc = ZSTD_decompressStream(codec_->zstd, &zout, &zin);
    Require(!ZSTD_isError(rc), "{}: corrupt zstd data near compressed byte {}: {}", path_,
            raw_read_ - raw_len_ + raw_pos_, ZSTD_getErrorName(rc));
    stream_done_ = rc == 0;
    produced = zout.pos;
    consumed = zin.pos;
  }
  raw_pos_ += consumed;
  end_ += produced;
  return true;
}

bool TextReader::ReadLine(std::string* line) {
  size_t scanned = begin_;
  while (true) {
    const void* nl = scanned < end_ ? std::memchr(buf_.get() + scanned, '\n', end_ - scanned) : nullptr;
    if (nl != nullptr) {
      const size_t at = static_cast<const char*>(nl) - buf_.get();
      line->assign(buf_.get() + begin_, at - begin_);
      begin_ = at + 1;
      return true;
    }
    scanned = end_;
    const size_t offset = scanned - begin_;  // Fill may move the unread bytes to the front
    if (!Fill()) {
      if (begin_ == end_) return false;
      line->assign(buf_.get() + begin_, end_ - begin_);
      begin_ = end_;
      return true;
    }
    scanned = begin_ + offset;
  }
}

std::string TextReader::ReadAll() {
  while (Fill()) {
  }
  std::string all(buf_.get() + begin_, end_ - begin_);
  begin_ = end_;
  return all;
}

std::string TextReader::RawSha256Hex() {
  while (ReadRaw() > 0) {
  }
  return sha_.HexDigest();
}

std::string ReadTextFile(const std::string& path) {
  TextReader reader(path);
  return reader.ReadAll();
}

}  // namespace replica
