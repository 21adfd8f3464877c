#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>

#include "testing/util.h"
#include "core/error.h"
#include "eval/eval_set.h"

namespace replica::eval {
namespace {

std::string ErrorOf(const std::string& text, const std::string& source = "t.jsonl") {
  return replica::test::ErrorOf([&] { ParseEvalSet(text, source); });
}

TEST(EvalSet, ParsesPerplexityAndMultipleChoice) {
  EvalSet p = ParseEvalSet("{\"id\":\"a\",\"text\":\"hello\"}\n\n{\"id\":7,\"tokens\":[1,2,3]}\n",
                           "dir/held.jsonl");
  EXPECT_EQ(p.name, "held");
  EXPECT_EQ(p.kind, SetKind::kPerplexity);
  ASSERT_EQ(p.docs.size(), 2u);
  EXPECT_EQ(p.docs[1].id, "7");
  EXPECT_EQ(p.docs[1].line, 3);
  EXPECT_EQ(p.docs[1].tokens, (std::vector<int32_t>{1, 2, 3}));

  EvalSet m = ParseEvalSet(
      "{\"id\":\"q1\",\"context\":\"The sky is\",\"choices\":[\" blue\",\" green\"],\"gold\":0}\n",
      "x/cloze.jsonl.zst");
  EXPECT_EQ(m.name, "cloze");
  EXPECT_EQ(m.kind, SetKind::kMultipleChoice);
  EXPECT_EQ(m.items[0].choices[1], " green");
}

TEST(EvalSet, MalformedLinesNameFileAndLine) {
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\n").find("t.jsonl:2: not valid JSON"),
            std::string::npos);
  // A number beyond double's range is nlohmann's out_of_range, not its parse_error.
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"tokens\":[1, 22e747]}\n").find("t.jsonl:1: not valid JSON"),
            std::string::npos);
  EXPECT_NE(ErrorOf("[1,2]\n").find("t.jsonl:1: expected a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"text\":\"x\"}\n").find("t.jsonl:1: missing field \"id\""), std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"text\":\"\"}\n").find("empty \"text\""), std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n")
                .find("t.jsonl:2: duplicate id \"a\""),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"context\":\"c\",\"choices\":[\" x\",\" y\"],\"gold\":2}\n")
                .find("t.jsonl:1: item \"a\" has gold 2 but only 2 choices"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"context\":\"c\",\"choices\":[\" x\"],\"gold\":0}\n")
                .find("at least two choices"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"context\":\"c\",\"choices\":[\" x\",\" y\"],\"gold\":\"0\"}\n")
                .find("\"gold\" must be an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"context\":\"c\",\"choices\":[\" x\",\" y\"],\"gold\":0}\n")
                .find("t.jsonl:2: a multiple_choice line in a perplexity set"),
            std::string::npos);
  EXPECT_NE(ErrorOf("{\"id\":\"a\",\"tokens\":[1,-2]}\n").find("not a token id"), std::string::npos);
}

TEST(EvalSet, EmptySetIsAnError) {
  EXPECT_NE(ErrorOf("", "e.jsonl").find("e.jsonl: the evaluation set is empty"), std::string::npos);
  EXPECT_NE(ErrorOf("\n  \n", "e.jsonl").find("is empty"), std::string::npos);
}

TEST(EvalSet, ReadsZstdAndReportsMissingFiles) {
  const std::string dir = ::testing::TempDir() + "/eval_set_test";
  std::filesystem::create_directories(dir);
  const std::string text = "{\"id\":\"a\",\"text\":\"compressed\"}\n";
  std::string comp(ZSTD_compressBound(text.size()), '\0');
  comp.resize(ZSTD_compress(comp.data(), comp.size(), text.data(), text.size(), 3));
  std::ofstream(dir + "/z.jsonl.zst", std::ios::binary) << comp;
  EvalSet s = LoadEvalSet(dir + "/z.jsonl.zst");
  EXPECT_EQ(s.name, "z");
  EXPECT_EQ(s.docs[0].text, "compressed");
  EXPECT_THROW(LoadEvalSet(dir + "/missing.jsonl"), Error);
}

// The reason zlib gives for a truncated stream is read before the stream is closed (it lives in
// the gzFile, which gzclose frees).
TEST(EvalSet, TruncatedGzipNamesZlibsReason) {
  const std::string dir = ::testing::TempDir() + "/eval_set_test_gz";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/truncated-held-out-set.jsonl.gz";
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "{\"id\":" + std::to_string(i) + ",\"text\":\"doc " +
                                         std::to_string(i * 7919) + "\"}\n";
  gzFile g = gzopen(path.c_str(), "wb");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(gzwrite(g, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(g), Z_OK);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  std::string e;
  try {
    LoadEvalSet(path);
  } catch (const Error& ex) {
    e = ex.what();
  }
  EXPECT_NE(e.find("corrupt gzip data"), std::string::npos) << e;
  EXPECT_NE(e.find(path + ": corrupt gzip data (unexpected end of file)"), std::string::npos) << e;
}

// A FIFO given as an eval set is refused at once instead of blocking in open().
TEST(EvalSetDeathTest, FifoIsRefusedNotWaitedOn) {
  const std::string dir = ::testing::TempDir() + "/eval_set_test_fifo";
  std::filesystem::create_directories(dir);
  for (const char* name : {"/fifo.jsonl", "/fifo.jsonl.gz", "/fifo.jsonl.zst"}) {
    const std::string path = dir + name;
    std::filesystem::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
    EXPECT_EXIT(
        {
          ::alarm(10);  // a blocked open() ends the child with SIGALRM
          try {
            LoadEvalSet(path);
          } catch (const Error& ex) {
            const std::string m = ex.what();
            std::_Exit(m.find(path) != std::string::npos && m.find("FIFO") != std::string::npos
                           ? 0
                           : 3);
          }
          std::_Exit(4);
        },
        ::testing::ExitedWithCode(0), "")
        << path;
  }
}

}  // namespace
}  // namespace replica::eval
