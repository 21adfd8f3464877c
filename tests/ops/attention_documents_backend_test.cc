// Intra-document masking through the Backend table: the bf16 CPU backend (SelectBackend("cpu",
// kBf16), the one a bf16 run trains with) restricts attention to each document in its forward and
// its backward, and agrees with the fp32 scalar reference of the masked computation to bf16
// resolution. The test has teeth: the unmasked reference is farther from the masked one than the
// tolerance, so an op that dropped cu_doc_lens on this path would fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "ops/backend.h"
#include "ops/cpu/attention.h"
#include "ops/registry.h"

namespace replica {
namespace {

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& e : x) e = dist(rng);
  return x;
}

double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

struct Outputs {
  std::vector<float> out, lse, dq, dk, dv;
};

struct Case {
  const char* name;
  int64_t H, KV, hd, window;
  std::vector<int32_t> cu;  // over B·T = 2·160
};

TEST(AttentionDocumentsBackend, Bf16BackendMasksForwardAndBackwardAsTheFp32Reference) {
  const int64_t B = 2, T = 160;
  const std::vector<Case> cases = {
      {"full", 4, 2, 16, 0, {0, 1, 40, 100, 160, 230, 320}},
      {"window48_mqa", 3, 1, 32, 48, {0, 70, 71, 160, 200, 320}},
      {"window5", 2, 2, 16, 5, {0, 3, 160, 161, 320}},
  };
  const Backend& bf16 = SelectBackend("cpu", Precision::kBf16);
  ASSERT_EQ(bf16.matmul_precision(), Precision::kBf16);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    AttentionShape s{B, T, c.H, c.KV, c.hd, c.window};
    s.cu_doc_lens = c.cu.data();
    s.num_cu_doc_lens = static_cast<int64_t>(c.cu.size());
    AttentionShape plain = s;
    plain.cu_doc_lens = nullptr;
    plain.num_cu_doc_lens = 0;
    const size_t nq = B * T * c.H * c.hd, nk = B * T * c.KV * c.hd;
    const std::vector<float> q = Random(nq, 1), k = Random(nk, 2), v = Random(nk, 3),
                             dout = Random(nq, 4);
    auto run = [&](const AttentionShape& shape, bool reference) {
      Outputs o;
      o.out.assign(nq, 0.0f);
      o.lse.assign(B * c.H * T, 0.0f);
      o.dq.assign(nq, 0.0f);
      o.dk.assign(nk, 0.0f);
      o.dv.assign(nk, 0.0f);
      if (reference) {
        AttentionForwardReference(shape, q.data(), k.data(), v.data(), o.out.data(),
                                  o.lse.data());
        AttentionBackwardReference(shape, q.data(), k.data(), v.data(), o.out.data(),
                                   o.lse.data(), dout.data(), o.dq.data(), o.dk.data(),
                                   o.dv.data());
      } else {
        bf16.AttentionForward(shape, q.data(), k.data(), v.data(), o.out.data(), o.lse.data());
        bf16.AttentionBackward(shape, q.data(), k.data(), v.data(), o.out.data(), o.lse.data(),
                               dout.data(), o.dq.data(), o.dk.data(), o.dv.data());
      }
      return o;
    };
    const Outputs ref = run(s, true);
    const Outputs got = run(s, false);
    const Outputs unmasked = run(plain, true);
    // bf16 operands (8 mantissa bits) with fp32 accumulation: about 2^-8 relative per product.
    const double tol = 3e-2;
    const double errs[] = {MaxRelativeError(got.out, ref.out), MaxRelativeError(got.dq, ref.dq),
                           MaxRelativeError(got.dk, ref.dk), MaxRelativeError(got.dv, ref.dv)};
    const double gaps[] = {MaxRelativeError(unmasked.out, ref.out),
                           MaxRelativeError(unmasked.dq, ref.dq),
                           MaxRelativeError(unmasked.dk, ref.dk),
                           MaxRelativeError(unmasked.dv, ref.dv)};
    const char* names[] = {"out", "dq", "dk", "dv"};
    for (int i = 0; i < 4; ++i) {
      EXPECT_LT(errs[i], tol) << names[i];
      EXPECT_GT(gaps[i], 4 * tol) << names[i] << ": masking must change the result";
    }
    EXPECT_LT(MaxRelativeError(got.lse, ref.lse), 1e-2);
  }
}

}  // namespace
}  // namespace replica
