// TokenizeToDisk: output layout (EOS after each document, uint32 LE), manifest, identical output
// for any thread count and chunk size, and errors that name file:line and leave no output.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zstd.h>

#include <filesystem>

#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/threads.h"
#include "tokenizer/tokenize_to_disk.h"
#include "test_tokenizer_util.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
using testing::Dolma2;

std::string Dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/tok_" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::vector<uint32_t> ReadU32(const std::string& path) {
  std::string raw = ReadFile(path);
  std::vector<uint32_t> v(raw.size() / 4);
  std::memcpy(v.data(), raw.data(), v.size() * 4);
  return v;
}

std::string ZstdOf(const std::string& s) {
  std::string out(ZSTD_compressBound(s.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3));
  return out;
}

TEST(TokenizeToDisk, WritesDocumentsWithEosAndManifest) {
  std::string in = Dir("in1");
  WriteFileAtomic(in + "/docs.jsonl",
                  "{\"id\": 1, \"text\": \"Hello world\"}\n\n{\"text\": \"\"}\n"
                  "{\"text\": \"a <|endoftext|> b\"}\n");
  WriteFileAtomic(in + "/book.txt.zst", ZstdOf("Call me Ishmael.\n"));
  std::string out = Dir("out1");
  TokenizeOptions opt;
  opt.out_dir = out;
  TokenizeSummary s = TokenizeToDisk(Dolma2(), {in + "/docs.jsonl", in + "/book.txt.zst"}, opt);
  EXPECT_EQ(s.documents, 3u);
  EXPECT_EQ(s.skipped_empty, 1u);
  EXPECT_EQ(s.dtype, "uint32");

  std::vector<uint32_t> want = Dolma2().Encode("Hello world");
  want.push_back(100257);
  for (uint32_t id : std::vector<uint32_t>{64, 220, 100257, 293, 100257}) want.push_back(id);
  EXPECT_EQ(ReadU32(out + "/docs.npy"), want);
  std::vector<uint32_t> book = Dolma2().Encode("Call me Ishmael.\n");
  book.push_back(100257);
  EXPECT_EQ(ReadU32(out + "/book.npy"), book);

  auto m = nlohmann::json::parse(ReadFile(out + "/manifest.json"));
  EXPECT_EQ(m["tokenizer"]["name"], "dolma2");
  EXPECT_EQ(m["tokenizer"]["source_sha256"], std::string(kCl100kSha256));
  EXPECT_EQ(m["tokenizer"]["eos_id"], 100257);
  EXPECT_EQ(m["dtype"], "uint32");
  EXPECT_EQ(m["inputs"][0]["sha256"], Sha256FileHex(in + "/docs.jsonl"));
  EXPECT_EQ(m["inputs"][1]["compression"], "zstd");
  EXPECT_EQ(m["inputs"][1]["format"], "text");
  EXPECT_EQ(m["outputs"][0]["path"], "docs.npy");
  EXPECT_EQ(m["outputs"][0]["sha256"], Sha256FileHex(out + "/docs.npy"));
  EXPECT_EQ(m["outputs"][0]["tokens"], want.size());
  EXPECT_EQ(m["outputs"][1]["documents"], 1);
  EXPECT_EQ(m["totals"]["tokens"], want.size() + book.size());
}

TEST(TokenizeToDisk, SameBytesForAnyThreadCountAndChunkSize) {
  std::string corpus = std::string(REPLICA_SOURCE_DIR) + "/data/corpus/moby_dick.jsonl.zst";
  std::string first, first_manifest;
  for (auto [threads, chunk] : {std::pair{1, size_t{1} << 20}, std::pair{2, size_t{1} << 20},
                                std::pair{2, size_t{3000}}}) {
    SetNumThreads(threads);
    std::string out = Dir("det" + std::to_string(threads) + "_" + std::to_string(chunk));
    TokenizeOptions opt;
    opt.out_dir = out;
    opt.chunk_bytes = chunk;
    opt.batch_bytes = 200000;  // several batches
    TokenizeToDisk(Dolma2(), {corpus}, opt);
    std::string bytes = ReadFile(out + "/moby_dick.npy");
    std::string manifest = ReadFile(out + "/manifest.json");
    if (first.empty()) first = bytes, first_manifest = manifest;
    EXPECT_EQ(bytes, first) << threads << " threads, chunk " << chunk;
    EXPECT_EQ(manifest, first_manifest);
  }
  SetNumThreads(0);
}

void ExpectFails(const std::vector<std::string>& inputs, const std::string& needle,
                 const std::string& out) {
  TokenizeOptions opt;
  opt.out_dir = out;
  try {
    TokenizeToDisk(Dolma2(), inputs, opt);
    ADD_FAILURE() << "expected Error containing " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  // Nothing became visible: no token files, no manifest, no temporaries.
  if (fs::exists(out)) {
    EXPECT_TRUE(fs::is_empty(out)) << out;
  }
}

TEST(TokenizeToDisk, BadInputNamesFileAndLineAndWritesNothing) {
  std::string in = Dir("bad_in");
  WriteFileAtomic(in + "/good.jsonl", "{\"text\": \"fine\"}\n");
  WriteFileAtomic(in + "/broken.jsonl", "{\"text\": \"ok\"}\n{\"text\": \"ok\"}\n{\"text\": oops}\n");
  WriteFileAtomic(in + "/notext.jsonl", "{\"text\": \"ok\"}\n{\"body\": \"x\"}\n");
  WriteFileAtomic(in + "/number.jsonl", "{\"text\": 5}\n");
  WriteFileAtomic(in + "/array.jsonl", "[1, 2]\n");
  WriteFileAtomic(in + "/latin1.txt", "caf\xE9\n");
  fs::create_directories(in + "/dup");
  WriteFileAtomic(in + "/dup/good.jsonl", "{\"text\": \"again\"}\n");
  ExpectFails({in + "/good.jsonl", in + "/broken.jsonl"},
              "broken.jsonl:3: not valid JSON at column 10", Dir("bad_out1"));
  ExpectFails({in + "/notext.jsonl"}, "notext.jsonl:2: missing field \"text\"", Dir("bad_out2"));
  ExpectFails({in + "/number.jsonl"}, "number.jsonl:1: field \"text\" is not a string",
              Dir("bad_out3"));
  ExpectFails({in + "/array.jsonl"}, "array.jsonl:1: expected a JSON object", Dir("bad_out4"));
  ExpectFails({in + "/latin1.txt"}, "latin1.txt: text: invalid UTF-8 at byte 3", Dir("bad_out5"));
  ExpectFails({in + "/missing.jsonl"}, "missing.jsonl", Dir("bad_out6"));
  ExpectFails({in + "/good.jsonl", in + "/dup/good.jsonl"}, "both write good.npy", Dir("bad_out7"));
  TokenizeOptions opt;
  opt.out_dir = Dir("bad_out8");
  opt.dtype = "uint16";
  EXPECT_THROW(TokenizeToDisk(Dolma2(), {in + "/good.jsonl"}, opt), Error);
}

TEST(TokenizeToDisk, OutputNames) {
  EXPECT_EQ(TokenFileNameFor("/a/b/sotu.jsonl.zst"), "sotu.npy");
  EXPECT_EQ(TokenFileNameFor("x.txt.gz"), "x.npy");
  EXPECT_EQ(TokenFileNameFor("notes.md"), "notes.md.npy");
}

}  // namespace
}  // namespace replica
