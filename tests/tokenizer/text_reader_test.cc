// TextReader: plain, gzip (also concatenated members) and zstd, lines and whole files, raw sha256,
// and clear errors for corrupt, truncated or misnamed inputs.
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"
#include "tokenizer/text_reader.h"

namespace replica {
namespace {

std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

std::string Temp(const std::string& name, const std::string& contents) {
  std::string path = ::testing::TempDir() + "/" + name;
  WriteFileAtomic(path, contents);
  return path;
}

std::vector<std::string> Lines(const std::string& path) {
  TextReader r(path);
  std::vector<std::string> lines;
  std::string line;
  while (r.ReadLine(&line)) lines.push_back(line);
  return lines;
}

// Big enough to cross the reader's 1 MiB raw chunks several times.
std::string ManyLines() {
  std::string s;
  for (int i = 0; i < 200000; ++i) s += "line " + std::to_string(i) + " \xC3\xA9t\xC3\xA9\n";
  s += "last line without newline";
  return s;
}

TEST(TextReader, SameLinesFromPlainGzipAndZstd) {
  std::string text = ManyLines();
  auto want = Lines(Temp("plain.jsonl", text));
  ASSERT_EQ(want.size(), 200001u);
  EXPECT_EQ(want.back(), "last line without newline");
  EXPECT_EQ(Lines(Temp("a.jsonl.gz", Gzip(text))), want);
  EXPECT_EQ(Lines(Temp("a.jsonl.zst", Zstd(text))), want);
  // Two gzip members one after the other read as one stream (as gzip -d does).
  std::string half = text.substr(0, 1000001);
  EXPECT_EQ(ReadTextFile(Temp("two.gz", Gzip(half) + Gzip(text.substr(half.size())))), text);
  // Compression is recognised from the contents, not the name.
  TextReader r(Temp("compressed_anyway.txt", Zstd(text)));
  EXPECT_EQ(r.compression(), Compression::kZstd);
  EXPECT_EQ(r.ReadAll(), text);
}

TEST(TextReader, HashesRawBytes) {
  std::string raw = Zstd("hello\nworld\n");
  TextReader r(Temp("h.zst", raw));
  EXPECT_EQ(r.ReadAll(), "hello\nworld\n");
  EXPECT_EQ(r.RawSha256Hex(), Sha256Hex(raw));
  EXPECT_EQ(r.raw_bytes_read(), raw.size());
}

TEST(TextReader, Errors) {
  EXPECT_THROW(TextReader(::testing::TempDir() + "/does_not_exist.txt"), Error);
  EXPECT_THROW(TextReader(::testing::TempDir()), Error);  // a directory
  EXPECT_THROW(TextReader(Temp("fake.gz", "not gzip")), Error);
  EXPECT_THROW(TextReader(Temp("fake.zst", "not zstd")), Error);
  std::string text = ManyLines();
  std::string gz = Gzip(text), zs = Zstd(text);
  EXPECT_THROW(ReadTextFile(Temp("trunc.gz", gz.substr(0, gz.size() / 2))), Error);
  EXPECT_THROW(ReadTextFile(Temp("trunc.zst", zs.substr(0, zs.size() / 2))), Error);
  std::string corrupt = gz;
  for (size_t i = 100; i < 200; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5A);
  EXPECT_THROW(ReadTextFile(Temp("corrupt.gz", corrupt)), Error);
  try {
    ReadTextFile(Temp("trunc2.zst", zs.substr(0, 20)));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("trunc2.zst"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace replica
