#include "ops/cpu/embedding.h"

#include <gtest/gtest.h>

#include "core/threads.h"
#include "op_test_util.h"

namespace replica {
namespace {
using testing::BitEqual;
using testing::RandomVector;

TEST(Embedding, ForwardCopiesRows) {
  const int64_t V = 10, D = 7;
  auto table = RandomVector(V * D, 1);
  std::vector<int32_t> tok = {3, 9, 3, 0};
  std::vector<float> out(tok.size() * D);
  EmbeddingForward(table.data(), tok.data(), 4, D, out.data());
  for (size_t i = 0; i < tok.size(); ++i)
    for (int64_t j = 0; j < D; ++j) EXPECT_EQ(out[i * D + j], table[tok[i] * D + j]);
}

TEST(Embedding, BackwardScatterAddIsDeterministicWithRepeats) {
  const int64_t V = 13, D = 33, N = 2000;  // N·D above kMinParallelWork: threads are used
  std::vector<int32_t> tok(N);
  for (int64_t i = 0; i < N; ++i) tok[i] = static_cast<int32_t>((i * 7 + i / 3) % 5 * 2);  // repeats
  auto dout = RandomVector(N * D, 2);
  auto base = RandomVector(V * D, 3);
  std::vector<float> ref = base;
  EmbeddingBackwardReference(tok.data(), dout.data(), N, D, ref.data());
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    std::vector<float> got = base;
    EmbeddingBackward(tok.data(), dout.data(), N, V, D, got.data());
    // Same additions in the same (position) order as the scalar loop: identical bits.
    EXPECT_TRUE(BitEqual(got, ref)) << threads << " threads";
  }
  SetNumThreads(0);
}

}  // namespace
}  // namespace replica
