// Reads the raw little-endian tensors tools/crosscheck's torch generators write: bf16 values as
// their 16 bits, float32 as its 32; an Error-free test failure (and zeros) for a file of another
// size.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/atomic_file.h"

namespace replica::testing {

inline std::vector<float> ReadBf16File(const std::string& path, size_t n) {
  const std::string bytes = ReadFile(path);
  EXPECT_EQ(bytes.size(), n * 2) << path;
  std::vector<float> v(n, 0.0f);
  for (size_t i = 0; i < n && 2 * i + 1 < bytes.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    std::memcpy(&v[i], &bits, 4);
  }
  return v;
}

inline std::vector<float> ReadFloatFile(const std::string& path, size_t n) {
  const std::string bytes = ReadFile(path);
  EXPECT_EQ(bytes.size(), n * 4) << path;
  std::vector<float> v(n, 0.0f);
  std::memcpy(v.data(), bytes.data(), std::min(bytes.size(), n * 4));
  return v;
}

}  // namespace replica::testing
