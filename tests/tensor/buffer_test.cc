// Buffers know their element type and location: zero-initialised aligned storage of the right byte
// size, typed access only as the stored type, FlatBuffer as the fp32 host case.
#include "tensor/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "tensor/flat_buffer.h"
#include "testing/util.h"

namespace replica {
namespace {

TEST(Buffer, KnowsItsTypeSizeAndLocationAndStartsZeroed) {
  Buffer b(DType::kBF16, 37);
  EXPECT_EQ(b.dtype(), DType::kBF16);
  EXPECT_EQ(b.location(), Location::kHost);
  EXPECT_EQ(b.size(), 37u);
  EXPECT_EQ(b.bytes(), 74u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.raw()) % 64, 0u);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.bf16()[i], 0);
  b.bf16()[5] = 0x3f80;  // 1.0
  b.Zero();
  EXPECT_EQ(b.bf16()[5], 0);
}

TEST(Buffer, TypedAccessAsAnotherTypeIsAnErrorNamingBoth) {
  Buffer b(DType::kBF16, 4);
  const std::string msg = test::ErrorOf([&] { b.f32(); });
  EXPECT_NE(msg.find("BF16"), std::string::npos) << msg;
  EXPECT_NE(msg.find("F32"), std::string::npos) << msg;
}

TEST(FlatBuffer, IsTheFp32HostBufferAndMovesOwnership) {
  FlatBuffer f(10);
  EXPECT_EQ(f.dtype(), DType::kF32);
  EXPECT_EQ(f.bytes(), 40u);
  EXPECT_EQ(f.f32(), f.data());
  f.data()[3] = 2.5f;
  FlatBuffer g = std::move(f);
  EXPECT_EQ(g.data()[3], 2.5f);
  EXPECT_EQ(g.size(), 10u);
  const FlatBuffer empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace replica
