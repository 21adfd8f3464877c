// safetensors reader and writer: the fixtures read as their README says, hand-made broken files
// give an Error naming the file and tensor (never a crash), and writer output round-trips exactly.
#include "io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/atomic_file.h"
#include "core/half.h"
#include "testing/safetensors_util.h"

namespace replica {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing_io::ErrorOf;
using testing_io::RawSafetensors;
using testing_io::WriteBytes;

const std::string kData = REPLICA_TEST_DATA;

class SafetensorsTest : public testing_io::TempDirTest {
 protected:
  // Writes a raw file and returns the message of the Error that opening it throws.
  std::string OpenError(const std::string& header, const std::string& data,
                        std::optional<uint64_t> length = std::nullopt) {
    const std::string path = Path("bad.safetensors");
    WriteBytes(path, RawSafetensors(header, data, length));
    return ErrorOf([&] { SafetensorsFile::Open(path); });
  }
};

// ---------------------------------------------------------------------------------------------
// The fixtures

TEST(SafetensorsFixture, TinyMhaModelHasCanonicalTensors) {
  auto f = SafetensorsFile::Open(kData + "/olmo3/tiny-mha/model.safetensors");
  ASSERT_EQ(f.tensors().size(), 47u);
  EXPECT_EQ(f.tensors().front().name, "model.embed_tokens.weight");
  EXPECT_EQ(f.tensors().front().shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(f.tensors()[1].name, "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(f.tensors()[46].name, "lm_head.weight");
  EXPECT_EQ(f.tensors()[45].name, "model.norm.weight");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  size_t elements = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.dtype, DType::kF32) << t.name;
    elements += static_cast<size_t>(t.numel());
  }
  EXPECT_EQ(elements, 255040u);  // README: parameters (elements)
  // Norm weights were drawn as 1 + 0.1·N(0,1): near one, not all one.
  auto norm = f.ReadF32("model.norm.weight");
  ASSERT_EQ(norm.size(), 64u);
  double mean = 0;
  bool all_one = true;
  for (float v : norm) {
    mean += v / 64.0;
    all_one &= v == 1.0f;
  }
  EXPECT_NEAR(mean, 1.0, 0.1);
  EXPECT_FALSE(all_one);
}

TEST(SafetensorsFixture, TinyGqaIoDump) {
  auto f = SafetensorsFile::Open(kData + "/olmo3/tiny-gqa/io.safetensors");
  EXPECT_EQ(f.Get("input_ids").dtype, DType::kI64);
  EXPECT_EQ(f.Get("input_ids").shape, (std::vector<int64_t>{3, 40}));
  EXPECT_EQ(f.Get("logits").shape, (std::vector<int64_t>{3, 40, 384}));
  EXPECT_TRUE(f.Get("loss").shape.empty());
  EXPECT_EQ(f.Get("loss").numel(), 1);
  EXPECT_EQ(f.tensors().size(), 5u + 91u);  // input_ids, labels, logits, loss, z_loss, grads
  auto labels = f.ReadI64("labels");
  int ignored = 0;
  for (int64_t v : labels) ignored += v == -100;
  EXPECT_EQ(ignored, 15);  // README: 105 of 120 loss tokens
  auto ids = f.ReadI64("input_ids");
  for (int64_t v : ids) EXPECT_TRUE(v >= 0 && v < 383) << v;  // never the pad id 383
  auto loss = f.ReadF64("loss");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_GT(loss[0], 5.0);  // about ln(384) = 5.95 for a random model
  EXPECT_LT(loss[0], 7.0);
  EXPECT_EQ(f.ReadF32("loss")[0], static_cast<float>(loss[0]));  // F64 -> F32 converts
  EXPECT_FALSE(f.metadata().at("fp32_reference_deviation").empty());
}

TEST(SafetensorsFixture, TrainLearningRates) {
  auto f = SafetensorsFile::Open(kData + "/olmo3/tiny-mha/train.safetensors");
  EXPECT_EQ(f.ReadF64("lr"), (std::vector<double>{1e-3, 2e-3, 3e-3, 2.5e-3, 1.5e-3, 5e-4}));
  EXPECT_EQ(f.tensors()[0].name, "step0.input_ids");
  EXPECT_EQ(f.tensors()[1].name, "step0.labels");
}

TEST_F(SafetensorsTest, RewriteOfFixtureIsByteIdentical) {
  // Our writer produces the same bytes as the tool that made the fixture: same header layout.
  const std::string src = kData + "/olmo3/tiny-mha/model.safetensors";
  auto f = SafetensorsFile::Open(src);
  SafetensorsWriter w;
  for (const auto& t : f.tensors()) w.Add(t.name, t.dtype, t.shape, t.data, t.nbytes);
  const std::string out = Path("model.safetensors");
  w.Write(out);
  EXPECT_TRUE(ReadFile(out) == ReadFile(src));
}

// ---------------------------------------------------------------------------------------------
// Broken files: each gives an Error naming the file (and tensor, where there is one)

TEST_F(SafetensorsTest, TooShort) {
  const std::string path = Path("short.safetensors");
  WriteBytes(path, "");
  EXPECT_THAT(ErrorOf([&] { SafetensorsFile::Open(path); }),
              AllOf(HasSubstr(path), HasSubstr("shorter than the 8-byte")));
  WriteBytes(path, std::string(7, '\0'));
  EXPECT_THAT(ErrorOf([&] { SafetensorsFile::Open(path); }), HasSubstr("7 bytes"));
}

TEST_F(SafetensorsTest, MissingFileAndDirectory) {
  EXPECT_THAT(ErrorOf([&] { SafetensorsFile::Open(Path("nope.safetensors")); }),
              HasSubstr("nope.safetensors"));
  EXPECT_THAT(ErrorOf([&] { SafetensorsFile::Open(dir_); }), HasSubstr(dir_));
}

TEST_F(SafetensorsTest, HeaderLengthBeyondFile) {
  EXPECT_THAT(OpenError("{}", "", 64), AllOf(HasSubstr("bad.safetensors"), HasSubstr("header length 64"),
                                             HasSubstr("truncated")));
}

TEST_F(SafetensorsTest, HeaderLengthAbsurd) {
  EXPECT_THAT(OpenError("{}", "", 1ull << 62), AllOf(HasSubstr("bad.safetensors"), HasSubstr("limit")));
  EXPECT_THAT(OpenError("{}", "", ~0ull), HasSubstr("limit"));
}

TEST_F(SafetensorsTest, BadJson) {
  EXPECT_THAT(OpenError(R"({"a": {"dtype": "F32",)", ""),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("not valid JSON")));
  EXPECT_THAT(OpenError("", ""), HasSubstr("not valid JSON"));
  EXPECT_THAT(OpenError(std::string("{\"a\":\0}", 7), ""), HasSubstr("not valid JSON"));
  EXPECT_THAT(OpenError("{\"\xff\xfe\": 1}", ""), HasSubstr("not valid JSON"));  // bad UTF-8
}

TEST_F(SafetensorsTest, HeaderNotObject) {
  EXPECT_THAT(OpenError("[1, 2]  ", ""), AllOf(HasSubstr("bad.safetensors"), HasSubstr("JSON object")));
  EXPECT_THAT(OpenError("null    ", ""), HasSubstr("JSON object"));
}

TEST_F(SafetensorsTest, EmptyHeaderObjectIsAnEmptyFile) {
  const std::string path = Path("empty.safetensors");
  WriteBytes(path, RawSafetensors("{}      ", ""));
  auto f = SafetensorsFile::Open(path);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_THAT(ErrorOf([&] { f.Get("x"); }), AllOf(HasSubstr(path), HasSubstr("'x'")));
}

TEST_F(SafetensorsTest, DuplicateNames) {
  const std::string e = R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                        R"( "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
  EXPECT_THAT(OpenError(e, std::string(8, '\0')),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("duplicate key 'w'")));
  // Inside an entry too: two dtypes would otherwise silently keep the last one.
  EXPECT_THAT(OpenError(R"({"w": {"dtype": "I64", "dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})",
                        std::string(4, '\0')),
              HasSubstr("duplicate key 'dtype'"));
}

TEST_F(SafetensorsTest, BadDtype) {
  auto h = [](const std::string& dtype) {
    return R"({"w": {"dtype": )" + dtype + R"(, "shape": [2], "data_offsets": [0, 2]}})";
  };
  EXPECT_THAT(OpenError(h("\"U8\""), "ab"),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("tensor 'w'"), HasSubstr("unsupported dtype 'U8'")));
  EXPECT_THAT(OpenError(h("\"f32\""), "ab"), HasSubstr("unsupported dtype 'f32'"));
  EXPECT_THAT(OpenError(h("\"F8_E4M3\""), "ab"), HasSubstr("unsupported dtype 'F8_E4M3'"));
  EXPECT_THAT(OpenError(h("4"), "ab"), AllOf(HasSubstr("tensor 'w'"), HasSubstr("'dtype' must be a string")));
  EXPECT_THAT(OpenError(R"({"w": {"shape": [2], "data_offsets": [0, 2]}})", "ab"),
              AllOf(HasSubstr("tensor 'w'"), HasSubstr("missing 'dtype'")));
}

TEST_F(SafetensorsTest, BadShape) {
  auto h = [](const std::string& shape) {
    return R"({"w": {"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": [0, 8]}})";
  };
  const std::string d(8, '\0');
  EXPECT_THAT(OpenError(h("[-2]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("-2 is negative")));
  EXPECT_THAT(OpenError(h("[2.0]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("non-negative integer")));
  EXPECT_THAT(OpenError(h("[\"2\"]"), d), HasSubstr("non-negative integer"));
  EXPECT_THAT(OpenError(h("2"), d), HasSubstr("'shape' must be an array"));
  EXPECT_THAT(OpenError(h("[18446744073709551615]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("too large")));
  EXPECT_THAT(OpenError(h("[4294967296, 4294967296]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("too many elements")));
  EXPECT_THAT(OpenError(R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", d), HasSubstr("missing 'shape'"));
}

TEST_F(SafetensorsTest, BadOffsets) {
  auto h = [](const std::string& off) {
    return R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": )" + off + "}}";
  };
  const std::string d(8, '\0');
  EXPECT_THAT(OpenError(h("[0]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("[begin, end]")));
  EXPECT_THAT(OpenError(h("[0, 8, 9]"), d), HasSubstr("[begin, end]"));
  EXPECT_THAT(OpenError(h("{}"), d), HasSubstr("[begin, end]"));
  EXPECT_THAT(OpenError(h("[-1, 8]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("negative")));
  EXPECT_THAT(OpenError(h("[0, 8.5]"), d), HasSubstr("non-negative integer"));
  EXPECT_THAT(OpenError(h("[8, 0]"), d), HasSubstr("begin after end"));
  EXPECT_THAT(OpenError(h("[0, 16]"), d), AllOf(HasSubstr("tensor 'w'"), HasSubstr("exceed the data section of 8 bytes")));
  EXPECT_THAT(OpenError(h("[0, 18446744073709551615]"), d), HasSubstr("exceed the data section"));
  EXPECT_THAT(OpenError(R"({"w": {"dtype": "F32", "shape": [2]}})", d), HasSubstr("missing 'data_offsets'"));
}

TEST_F(SafetensorsTest, SizeMismatch) {
  // 3 floats need 12 bytes, the range holds 8.
  EXPECT_THAT(OpenError(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", std::string(8, '\0')),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("tensor 'w'"), HasSubstr("span 8 bytes"),
                    HasSubstr("12 bytes")));
  EXPECT_THAT(OpenError(R"({"w": {"dtype": "BF16", "shape": [], "data_offsets": [0, 4]}})", std::string(4, '\0')),
              HasSubstr("needs 1 x 2 = 2 bytes"));
}

TEST_F(SafetensorsTest, OverlapHoleAndTrailingBytes) {
  const std::string d(16, '\0');
  EXPECT_THAT(OpenError(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                        R"( "b": {"dtype": "F32", "shape": [3], "data_offsets": [4, 16]}})", d),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("'b'"), HasSubstr("overlap tensor 'a'")));
  // Same begin: the shorter sorts first and the longer overlaps it.
  EXPECT_THAT(OpenError(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                        R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", d),
              HasSubstr("overlap"));
  // A zero-size tensor inside another's range still overlaps it.
  EXPECT_THAT(OpenError(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},)"
                        R"( "z": {"dtype": "F32", "shape": [0], "data_offsets": [8, 8]}})", d),
              AllOf(HasSubstr("'z'"), HasSubstr("overlap")));
  EXPECT_THAT(OpenError(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                        R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}})", d),
              AllOf(HasSubstr("bytes [8, 12)"), HasSubstr("hole before tensor 'b'")));
  EXPECT_THAT(OpenError(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", d),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("16 bytes"), HasSubstr("cover only 8")));
}

TEST_F(SafetensorsTest, BadMetadataAndEntries) {
  EXPECT_THAT(OpenError(R"({"__metadata__": [1]})", ""), HasSubstr("__metadata__ must be an object"));
  EXPECT_THAT(OpenError(R"({"__metadata__": {"format": 1}})", ""),
              AllOf(HasSubstr("bad.safetensors"), HasSubstr("'format' must be a string")));
  EXPECT_THAT(OpenError(R"({"w": [1, 2]})", ""), AllOf(HasSubstr("tensor 'w'"), HasSubstr("must be an object")));
}

TEST_F(SafetensorsTest, ConversionsAndDtypeRefusals) {
  // One tensor per dtype, hand-packed.
  std::string data;
  auto put = [&](const void* p, size_t n) { data.append(static_cast<const char*>(p), n); };
  const float f32[2] = {1.5f, -2.25f};
  const uint16_t bf16[2] = {F32ToBf16(3.0f), F32ToBf16(-0.5f)};
  const uint16_t f16[2] = {F32ToF16(0.25f), F32ToF16(65504.0f)};
  const double f64[2] = {0.1, -1e300};
  const int32_t i32[2] = {-7, 2147483647};
  const int64_t i64[2] = {-100, int64_t{1} << 40};
  put(f32, 8); put(bf16, 4); put(f16, 4); put(f64, 16); put(i32, 8); put(i64, 16);
  const std::string header =
      R"({"f32": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
      R"( "bf16": {"dtype": "BF16", "shape": [2], "data_offsets": [8, 12]},)"
      R"( "f16": {"dtype": "F16", "shape": [1, 2], "data_offsets": [12, 16]},)"
      R"( "f64": {"dtype": "F64", "shape": [2], "data_offsets": [16, 32]},)"
      R"( "i32": {"dtype": "I32", "shape": [2], "data_offsets": [32, 40]},)"
      R"( "i64": {"dtype": "I64", "shape": [2, 1], "data_offsets": [40, 56]}})";
  const std::string path = Path("all.safetensors");
  WriteBytes(path, RawSafetensors(header, data));
  auto f = SafetensorsFile::Open(path);
  EXPECT_EQ(f.ReadF32("f32"), (std::vector<float>{1.5f, -2.25f}));
  EXPECT_EQ(f.ReadF32("bf16"), (std::vector<float>{3.0f, -0.5f}));
  EXPECT_EQ(f.ReadF32("f16"), (std::vector<float>{0.25f, 65504.0f}));
  EXPECT_EQ(f.ReadF32("f64"), (std::vector<float>{0.1f, -INFINITY}));  // rounds like a cast
  EXPECT_EQ(f.ReadF64("f64"), (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(f.ReadF64("f32"), (std::vector<double>{1.5, -2.25}));
  EXPECT_EQ(f.ReadI64("i32"), (std::vector<int64_t>{-7, 2147483647}));
  EXPECT_EQ(f.ReadI64("i64"), (std::vector<int64_t>{-100, int64_t{1} << 40}));
  EXPECT_THAT(ErrorOf([&] { f.ReadF32("i64"); }),
              AllOf(HasSubstr(path), HasSubstr("'i64'"), HasSubstr("dtype I64")));
  EXPECT_THAT(ErrorOf([&] { f.ReadF64("i32"); }), AllOf(HasSubstr("'i32'"), HasSubstr("dtype I32")));
  EXPECT_THAT(ErrorOf([&] { f.ReadI64("f32"); }), AllOf(HasSubstr("'f32'"), HasSubstr("dtype F32")));
  float dst[3];
  EXPECT_THAT(ErrorOf([&] { f.ReadF32Into("bf16", dst, 3); }),
              AllOf(HasSubstr(path), HasSubstr("'bf16'"), HasSubstr("2 elements"), HasSubstr("expected 3")));
  f.ReadF32Into("f16", dst, 2);
  EXPECT_EQ(dst[0], 0.25f);
  EXPECT_THAT(ErrorOf([&] { f.Get("missing"); }), AllOf(HasSubstr(path), HasSubstr("'missing'")));
  EXPECT_EQ(f.Find("missing"), nullptr);
  ASSERT_NE(f.Find("i64"), nullptr);
  EXPECT_EQ(f.Find("i64")->shape, (std::vector<int64_t>{2, 1}));
}

// ---------------------------------------------------------------------------------------------
// Writer

TEST_F(SafetensorsTest, WriterRoundTrip) {
  std::vector<float> w(3 * 5);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.37f * static_cast<float>(i) - 2.0f;
  const int64_t ids[4] = {1, 2, 3, -100};
  const double loss = 6.25;
  const int32_t small[3] = {4, 5, 6};
  SafetensorsWriter sw;
  sw.AddF32("weight", {3, 5}, w.data());
  sw.Add("ids", DType::kI64, {2, 2}, ids, sizeof(ids));
  sw.AddCopy("loss", DType::kF64, {}, &loss, sizeof(loss));
  sw.Add("small", DType::kI32, {3}, small, sizeof(small));
  sw.Add("empty", DType::kF32, {0, 4}, nullptr, 0);
  sw.AddF32("as_bf16", {3, 5}, w.data(), DType::kBF16);
  sw.AddF32("as_f16", {15}, w.data(), DType::kF16);
  sw.SetMetadata("description", "round trip");
  EXPECT_EQ(sw.size(), 7u);
  const std::string path = Path("rt.safetensors");
  sw.Write(path);

  const std::string bytes = ReadFile(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + sw.data_bytes());
  auto f = SafetensorsFile::Open(path);
  std::vector<std::string> names;
  for (const auto& t : f.tensors()) names.push_back(t.name);
  // Packed in Add() order (tensors() is in offset order).
  EXPECT_EQ(names, (std::vector<std::string>{"weight", "ids", "loss", "small", "empty", "as_bf16", "as_f16"}));
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("description"), "round trip");
  EXPECT_EQ(f.ReadF32("weight"), w);
  EXPECT_EQ(f.ReadI64("ids"), (std::vector<int64_t>{1, 2, 3, -100}));
  EXPECT_EQ(f.ReadF64("loss"), (std::vector<double>{6.25}));
  EXPECT_TRUE(f.Get("loss").shape.empty());
  EXPECT_EQ(f.ReadI64("small"), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(f.Get("empty").shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(f.ReadF32("empty").empty());
  EXPECT_EQ(f.Get("as_bf16").dtype, DType::kBF16);
  EXPECT_EQ(f.Get("as_f16").dtype, DType::kF16);
  auto b = f.ReadF32("as_bf16");
  auto h = f.ReadF32("as_f16");
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(b[i], Bf16ToF32(F32ToBf16(w[i])));
    EXPECT_EQ(h[i], F16ToF32(F32ToF16(w[i])));
  }
  // Writing again replaces the file atomically with the same content.
  sw.Write(path);
  EXPECT_EQ(ReadFile(path), bytes);
  for (const auto& e : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST_F(SafetensorsTest, WriterLargeConvertedTensorCrossesChunks) {
  // More elements than one conversion chunk (65536), to exercise the chunked bf16 path.
  std::vector<float> w(200003);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.001f * static_cast<float>(i));
  SafetensorsWriter sw;
  sw.AddF32("w", {static_cast<int64_t>(w.size())}, w.data(), DType::kBF16);
  sw.Write(Path("big.safetensors"));
  auto back = SafetensorsFile::Open(Path("big.safetensors")).ReadF32("w");
  ASSERT_EQ(back.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) ASSERT_EQ(back[i], Bf16ToF32(F32ToBf16(w[i]))) << i;
}

TEST_F(SafetensorsTest, WriterRefusesBadTensors) {
  const float x[4] = {};
  SafetensorsWriter sw;
  sw.AddF32("a", {4}, x);
  EXPECT_THAT(ErrorOf([&] { sw.AddF32("a", {4}, x); }), HasSubstr("'a' added twice"));
  EXPECT_THAT(ErrorOf([&] { sw.Add("b", DType::kF32, {3}, x, 16); }),
              AllOf(HasSubstr("'b'"), HasSubstr("16 bytes given"), HasSubstr("needs 12")));
  EXPECT_THAT(ErrorOf([&] { sw.Add("c", DType::kF32, {-1}, x, 4); }), AllOf(HasSubstr("'c'"), HasSubstr("negative")));
  EXPECT_THAT(ErrorOf([&] { sw.AddF32("__metadata__", {4}, x); }), HasSubstr("reserved"));
  EXPECT_THAT(ErrorOf([&] { sw.AddF32("d", {4}, x, DType::kI32); }), HasSubstr("not I32"));
  EXPECT_THAT(ErrorOf([&] { sw.Add("e", DType::kF32, {1}, nullptr, 4); }), HasSubstr("null data"));
  EXPECT_THAT(ErrorOf([&] { sw.AddF32("\xff", {4}, x); }), HasSubstr("UTF-8"));
  EXPECT_EQ(sw.size(), 1u);  // refused tensors were not added
}

TEST_F(SafetensorsTest, WriterErrorsNameThePath) {
  const float x[4] = {};
  SafetensorsWriter sw;
  sw.AddF32("a", {4}, x);
  const std::string path = Path("no/such/dir/out.safetensors");
  EXPECT_THAT(ErrorOf([&] { sw.Write(path); }), HasSubstr("no/such/dir/out.safetensors"));
}

TEST_F(SafetensorsTest, WriterFullDiskLeavesNothing) {
  // A file-size limit makes write() fail like a full disk does (EFBIG instead of ENOSPC).
  std::vector<float> big(1 << 16);
  SafetensorsWriter sw;
  sw.AddF32("big", {static_cast<int64_t>(big.size())}, big.data());
  const std::string path = Path("full.safetensors");
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  const std::string err = ErrorOf([&] { sw.Write(path); });
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  EXPECT_THAT(err, AllOf(HasSubstr(path), HasSubstr("write failed")));
  EXPECT_TRUE(std::filesystem::is_empty(dir_));  // neither the file nor its temporary
}

// Every prefix of a valid file and random header corruptions: open or Error, never a crash.
TEST_F(SafetensorsTest, TruncationsAndCorruptionsNeverCrash) {
  const float x[6] = {1, 2, 3, 4, 5, 6};
  const int64_t y[2] = {7, 8};
  SafetensorsWriter sw;
  sw.AddF32("x", {2, 3}, x);
  sw.Add("y", DType::kI64, {2}, y, sizeof(y));
  const std::string good_path = Path("good.safetensors");
  sw.Write(good_path);
  const std::string good = ReadFile(good_path);
  const std::string path = Path("mut.safetensors");
  for (size_t len = 0; len < good.size(); ++len) {
    WriteBytes(path, good.substr(0, len));
    EXPECT_THAT(ErrorOf([&] { SafetensorsFile::Open(path); }), HasSubstr(path)) << "prefix " << len;
  }
  std::mt19937 rng(1234);
  int opened = 0, refused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string bad = good;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
    WriteBytes(path, bad);
    try {
      auto f = SafetensorsFile::Open(path);
      for (const auto& t : f.tensors()) {  // whatever opened must be readable in full
        if (t.dtype == DType::kI64 || t.dtype == DType::kI32)
          (void)f.ReadI64(t.name);
        else
          (void)f.ReadF64(t.name);
      }
      ++opened;
    } catch (const Error& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(path));
      ++refused;
    }
  }
  EXPECT_EQ(opened + refused, 200);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace replica
