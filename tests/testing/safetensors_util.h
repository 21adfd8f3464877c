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

#include "testing/util.h"
#include "core/error.h"

namespace replica::testing_io {

class TempDirTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return tmp_.File(name); }
  test::TempDir tmp_{"io"};
  std::string dir_ = tmp_.str();
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
using replica::test::ErrorOf;

}  // namespace replica::testing_io
