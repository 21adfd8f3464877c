// bf16-fsdp's attention against torch's own (tests/data/reference/torch_sdpa, written by
// tools/crosscheck/generate_torch_sdpa.py on an AVX2 CPU, where torch computes the backward's bf16
// GEMMs in ATen's reference loops): F.scaled_dot_product_attention as OLMo-core's torch backend
// calls it on bf16 q, k, v (k and v repeated per query head, a sliding window as a bool mask,
// else is_causal), its log-sum-exp and autograd's dq, dk, dv, followed on the kReference path,
// every element bit for bit. Head dims 8, 16, 24, 64 and 128, key blocks with and without 8- and
// 16-key tails, GQA; 200 and 300 keys (the forward's P·V sum in two pieces), 700 and 800 (two
// key blocks, the first summed in pieces of 192 keys); last query blocks of 1 and 2 queries (the
// forward's scores in eight lanes); the follow model's attention at 300 and 500 tokens.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "op_test_util.h"
#include "ops/attention_shape.h"
#include "ops/cpu/fsdp_bf16.h"
#include "torch_reference_file.h"

namespace replica {
namespace {
using testing::BitEqualCount;
using testing::ReadBf16File;
using testing::ReadFloatFile;

const std::string kDir = std::string(REPLICA_TEST_DATA) + "/reference/torch_sdpa/";

TEST(TorchSdpa, TheReferencePathIsTorchsAvx2Kernel) {
  const auto j = nlohmann::json::parse(ReadFile(kDir + "cases.json"));
  ASSERT_EQ(j["cpu_capability"], "AVX2");
  for (const auto& c : j["cases"]) {
    const std::string name = c["name"];
    SCOPED_TRACE(name);
    const AttentionShape s{c["B"].get<int64_t>(), c["T"].get<int64_t>(), c["H"].get<int64_t>(),
                           c["KV"].get<int64_t>(), c["D"].get<int64_t>(),
                           c["window"].get<int64_t>()};
    const size_t nq = static_cast<size_t>(s.B * s.T * s.H * s.hd),
                 nk = static_cast<size_t>(s.B * s.T * s.KV * s.hd),
                 nl = static_cast<size_t>(s.B * s.H * s.T);
    const std::string f = kDir + name;
    const auto q = ReadBf16File(f + ".q", nq), k = ReadBf16File(f + ".k", nk),
               v = ReadBf16File(f + ".v", nk), dout = ReadBf16File(f + ".dout", nq);
    const auto out_ref = ReadBf16File(f + ".out", nq), lse_ref = ReadFloatFile(f + ".lse", nl);
    const auto dq_ref = ReadBf16File(f + ".dq", nq), dk_ref = ReadBf16File(f + ".dk", nk),
               dv_ref = ReadBf16File(f + ".dv", nk);
    std::vector<float> out(nq), lse(nl), dq(nq, 0.0f), dk(nk, 0.0f), dv(nk, 0.0f);
    FsdpAttentionForward(s, q.data(), k.data(), v.data(), out.data(), lse.data(),
                         TorchCpuPath::kReference);
    EXPECT_EQ(BitEqualCount(out, out_ref), static_cast<int64_t>(nq));
    EXPECT_EQ(BitEqualCount(lse, lse_ref), static_cast<int64_t>(nl));
    // The backward from torch's own forward: every gradient element torch's.
    FsdpAttentionBackward(s, q.data(), k.data(), v.data(), out_ref.data(), lse_ref.data(),
                          dout.data(), dq.data(), dk.data(), dv.data(), TorchCpuPath::kReference);
    EXPECT_EQ(BitEqualCount(dq, dq_ref), static_cast<int64_t>(nq));
    EXPECT_EQ(BitEqualCount(dk, dk_ref), static_cast<int64_t>(nk));
    EXPECT_EQ(BitEqualCount(dv, dv_ref), static_cast<int64_t>(nk));
  }
}

}  // namespace
}  // namespace replica
