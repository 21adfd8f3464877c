#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "testing/util.h"
#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"
#include "core/half.h"
#include "core/huge_pages.h"
#include "core/mmap.h"
#include "tensor/flat_buffer.h"

namespace replica {
namespace {

TEST(Checksum, Sha256KnownVector) {
  EXPECT_EQ(Sha256Hex(std::string_view("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Half, Bf16RoundTripAndRounding) {
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.0f)), 1.0f);
  EXPECT_EQ(Bf16ToF32(F32ToBf16(-3.5f)), -3.5f);
  // 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1+2^-7: ties to even -> 1.
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(NAN))));
}

TEST(Half, F16RoundTrip) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    EXPECT_EQ(F16ToF32(F32ToF16(v)), v) << v;
  }
  EXPECT_TRUE(std::isinf(F16ToF32(F32ToF16(1e6f))));
  EXPECT_EQ(F16ToF32(F32ToF16(1.0f + 1.0f / 4096)), 1.0f);  // halfway: ties to even
}

TEST(AtomicFile, WritesAndReplaces) {
  test::TempDir tmp("core");
  const std::filesystem::path& dir = tmp.path();
  std::string path = (dir / "a.txt").string();
  WriteFileAtomic(path, "one");
  WriteFileAtomic(path, "two");
  EXPECT_EQ(ReadFile(path), "two");
  MappedFile f = MappedFile::Open(path);
  EXPECT_EQ(f.size(), 3u);
  EXPECT_THROW(MappedFile::Open((dir / "missing").string()), Error);
}

TEST(FlatBuffer, LayoutAlignsAndFinds) {
  ParamLayout layout;
  layout.Add("a", {3, 5});
  const ParamView& b = layout.Add("b", {7});
  EXPECT_EQ(b.offset, 16u);
  EXPECT_EQ(layout.num_elements(), 22u);
  EXPECT_EQ(layout.total_floats(), 32u);
  EXPECT_THROW(layout.Get("c"), Error);
  EXPECT_THROW(layout.Add("a", {1}), Error);
  FlatBuffer buf(layout.total_floats());
  EXPECT_EQ(buf.View(b).size(), 7u);
}

}  // namespace
}  // namespace replica

TEST(HugePageBuffer, IsAlignedWritableAndSaysWhatIsHuge) {
  const size_t bytes = (size_t{5} << 20) + 123;
  replica::HugePageBuffer b = replica::HugePageBuffer::Allocate(bytes);
  ASSERT_NE(b.data(), nullptr);
  EXPECT_EQ(b.size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
  std::memset(b.data(), 0xAB, bytes);
  EXPECT_EQ(b.data()[bytes - 1], 0xAB);
  // Where THP is off the kernel backs it with small pages: never more huge bytes than mapped.
  EXPECT_LE(b.huge_bytes(), size_t{6} << 20);
  replica::HugePageBuffer moved = std::move(b);
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(moved.data()[0], 0xAB);
  EXPECT_EQ(replica::HugePageBuffer::Allocate(0).data(), nullptr);
  EXPECT_GT(replica::AvailableMemoryBytes(), 0u);
}
