// Helpers shared by the io tests: a scratch directory per test, raw file writers for hand-made
// (possibly broken) safetensors files, and capturing the message of an expected replica::Error.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/error.h"

namespace replica::testing_io {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "replica-io-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (std::filesystem::path(dir_) / name).string(); }
  std::string dir_;
};

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// 8-byte little-endian length (default: header.size()), header text, data bytes.
inline std::string RawSafetensors(const std::string& header, const std::string& data,
                                  std::optional<uint64_t> length = std::nullopt) {
  const uint64_t n = length.value_or(header.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

// The message of the replica::Error that f throws, or "<no error>".
template <typename F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const replica::Error& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace replica::testing_io
