// Packed instances (cu_doc_lens): the model computes every document as if it were alone, as
// OLMo-core's model does with cu_doc_lens (attention within the document, RoPE positions from 0
// in each document). A packed batch's logits, loss sums and parameter gradients equal those of
// its documents run one by one (sliding and full layers, plain RoPE and YaRN, fp32 and bf16);
// one document per row is the unpacked result bit for bit; results do not depend on the thread
// count; and the test has teeth: without the document lengths the same tokens give other logits.
// RoPE being relative, restarting its positions changes a document's q·k only by rounding; the
// restart itself is checked on the RoPE op with DocumentPositions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/threads.h"
#include "model/document_positions.h"
#include "model/olmo3.h"
#include "testing/random_model.h"
#include "ops/cpu/rope.h"
#include "ops/registry.h"

namespace replica {
namespace {

ModelConfig PackedConfig() {
  ModelConfig c;
  c.model_type = "olmo3";
  c.vocab_size = 29;
  c.hidden_size = 32;
  c.intermediate_size = 24;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.rms_norm_eps = 1e-5;
  c.SetPlainRope(10000);
  c.rope_full.type = RopeType::kYarn;  // the full layer's positions matter differently
  c.rope_full.factor = 4;
  c.rope_full.original_max_position_embeddings = 8;
  c.rope_full.attention_factor = 1.2;
  c.sliding_window = 4;
  c.layer_types = {AttentionType::kSliding, AttentionType::kFull, AttentionType::kSliding};
  c.max_position_embeddings = 64;
  return c;
}

using test::RandomInit;

constexpr int64_t kB = 2, kT = 24;
// Row 0: a single token, a document shorter than the window, longer ones; row 1: one document.
const std::vector<int32_t> kCu{0, 1, 4, 15, 24, 48};

struct Batch {
  std::vector<int32_t> ids, labels;
};

Batch RandomBatch(int64_t V, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Batch b;
  for (int64_t i = 0; i < kB * kT; ++i) {
    b.ids.push_back(static_cast<int32_t>(rng() % V));
    b.labels.push_back(i % 7 == 5 ? kIgnoreLabel : static_cast<int32_t>(rng() % V));
  }
  return b;
}

double MaxRelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

struct Result {
  CrossEntropySums sums;
  std::vector<float> logits, grads;
};

// The packed batch in one call, or its documents one call each (sums and gradients added up,
// logits put back in place).
Result RunPacked(Olmo3Model& m, const Batch& b, const std::vector<int32_t>* cu) {
  Result r;
  const int64_t V = m.config().vocab_size;
  const int32_t* c = cu ? cu->data() : nullptr;
  const int64_t n = cu ? static_cast<int64_t>(cu->size()) : 0;
  r.logits.resize(kB * kT * V);
  m.ForwardLogits(b.ids.data(), kB, kT, r.logits.data(), c, n);
  m.grads().Zero();
  r.sums = m.ForwardBackward(b.ids.data(), b.labels.data(), kB, kT, 1.0, 0.01, c, n);
  r.grads.assign(m.grads().data(), m.grads().data() + m.grads().size());
  return r;
}

Result RunDocumentsAlone(Olmo3Model& m, const Batch& b) {
  Result r;
  const int64_t V = m.config().vocab_size;
  r.logits.resize(kB * kT * V);
  m.grads().Zero();
  for (size_t d = 0; d + 1 < kCu.size(); ++d) {
    const int64_t c0 = kCu[d], len = kCu[d + 1] - c0;
    m.ForwardLogits(b.ids.data() + c0, 1, len, r.logits.data() + c0 * V);
    const CrossEntropySums s =
        m.ForwardBackward(b.ids.data() + c0, b.labels.data() + c0, 1, len, 1.0, 0.01);
    r.sums.ce_sum += s.ce_sum;
    r.sums.lse_sq_sum += s.lse_sq_sum;
    r.sums.tokens += s.tokens;
  }
  r.grads.assign(m.grads().data(), m.grads().data() + m.grads().size());
  return r;
}

TEST(Olmo3Documents, PackedBatchIsItsDocumentsRunAlone) {
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    SCOPED_TRACE(p == Precision::kBf16 ? "bf16" : "fp32");
    const ModelConfig c = PackedConfig();
    Olmo3Model m(c, kB, kT, SelectBackend("cpu", p));
    RandomInit(m, 5);
    const Batch b = RandomBatch(c.vocab_size, 9);
    const Result packed = RunPacked(m, b, &kCu);
    const Result alone = RunDocumentsAlone(m, b);
    // The same arithmetic per document; only the GEMMs' row blocking and the order in which the
    // documents' gradient terms are added differ.
    const double logits_err = MaxRelativeError(packed.logits, alone.logits);
    const double grads_err = MaxRelativeError(packed.grads, alone.grads);
    std::printf("[%s] packed vs alone: logits %.3g  grads %.3g  ce %.9g vs %.9g\n",
                p == Precision::kBf16 ? "bf16" : "fp32", logits_err, grads_err,
                packed.sums.ce_sum, alone.sums.ce_sum);
    EXPECT_LT(logits_err, 1e-5);
    EXPECT_LT(grads_err, 1e-5);
    EXPECT_EQ(packed.sums.tokens, alone.sums.tokens);
    EXPECT_NEAR(packed.sums.ce_sum, alone.sums.ce_sum, 1e-5 * alone.sums.ce_sum);
    EXPECT_NEAR(packed.sums.lse_sq_sum, alone.sums.lse_sq_sum, 1e-5 * alone.sums.lse_sq_sum);
    // Without the document lengths the later documents see earlier ones and other positions.
    const Result unmasked = RunPacked(m, b, nullptr);
    EXPECT_GT(MaxRelativeError(unmasked.logits, alone.logits), 1e-2);
  }
}

// RoPE with DocumentPositions rotates by the position within the document: a document's first token is
// at position 0 (plain RoPE: the identity, bit for bit), and every token is rotated as the
// fp64 reference rotates position p - start; its backward is the transpose.
TEST(Olmo3Documents, RopePositionsRestartInEveryDocument) {
  const int64_t heads = 3, hd = 8, width = heads * hd;
  const RopeTable rope = MakeRopeTable(kT, hd, 10000.0);
  std::mt19937 rng(3);
  std::normal_distribution<float> n01;
  std::vector<float> x(kB * kT * width), dy(x.size());
  for (float& e : x) e = n01(rng);
  for (float& e : dy) e = n01(rng);
  const Backend& ops = SelectBackend("cpu", Precision::kFp32);
  std::vector<float> y = x, rows = x;
  const std::vector<int32_t> positions =
      DocumentPositions(kCu.data(), static_cast<int64_t>(kCu.size()), kB, kT);
  ops.RopeForward(rope, y.data(), kB, kT, heads, positions.data(), y.data());
  ops.RopeForward(rope, rows.data(), kB, kT, heads, nullptr, rows.data());
  double max_err = 0, max_moved = 0;
  for (size_t d = 0; d + 1 < kCu.size(); ++d) {
    const int64_t c0 = kCu[d], len = kCu[d + 1] - c0;
    std::vector<float> ref(len * width);
    RopeForwardReference(hd, 10000.0, x.data() + c0 * width, 1, len, heads, ref.data());
    for (int64_t i = 0; i < len * width; ++i) {
      max_err = std::max(max_err, std::fabs(double(y[c0 * width + i]) - ref[i]));
      max_moved = std::max(max_moved, std::fabs(double(rows[c0 * width + i]) - ref[i]));
    }
    for (int64_t i = 0; i < width; ++i) EXPECT_EQ(y[c0 * width + i], x[c0 * width + i]);
  }
  EXPECT_LT(max_err, 1e-6);
  EXPECT_GT(max_moved, 1e-1);  // row positions are other rotations
  // <dy, R x> = <Rᵀ dy, x>.
  std::vector<float> dx(x.size(), 0.0f);
  ops.RopeBackward(rope, dy.data(), kB, kT, heads, positions.data(), dx.data());
  double lhs = 0, rhs = 0;
  for (size_t i = 0; i < x.size(); ++i) lhs += double(dy[i]) * y[i], rhs += double(dx[i]) * x[i];
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::fabs(lhs));
}

TEST(Olmo3Documents, OneDocumentPerRowIsTheUnpackedResultBitForBit) {
  const std::vector<int32_t> rows{0, kT, 2 * kT};
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    const ModelConfig c = PackedConfig();
    Olmo3Model m(c, kB, kT, SelectBackend("cpu", p));
    RandomInit(m, 7);
    const Batch b = RandomBatch(c.vocab_size, 11);
    const Result plain = RunPacked(m, b, nullptr);
    const Result per_row = RunPacked(m, b, &rows);
    EXPECT_EQ(plain.logits, per_row.logits);
    EXPECT_EQ(plain.grads, per_row.grads);
    EXPECT_EQ(plain.sums.ce_sum, per_row.sums.ce_sum);
  }
}

TEST(Olmo3Documents, PackedResultsDoNotDependOnTheThreadCount) {
  const ModelConfig c = PackedConfig();
  Olmo3Model m(c, kB, kT, SelectBackend("cpu", Precision::kFp32));
  RandomInit(m, 8);
  const Batch b = RandomBatch(c.vocab_size, 12);
  SetNumThreads(1);
  const Result one = RunPacked(m, b, &kCu);
  SetNumThreads(2);
  const Result two = RunPacked(m, b, &kCu);
  SetNumThreads(0);
  EXPECT_EQ(one.logits, two.logits);
  EXPECT_EQ(one.grads, two.grads);
  EXPECT_EQ(one.sums.ce_sum, two.sums.ce_sum);
}

TEST(Olmo3Documents, InvalidDocumentLengthsAreErrors) {
  const ModelConfig c = PackedConfig();
  Olmo3Model m(c, kB, kT, SelectBackend("cpu", Precision::kFp32));
  const Batch b = RandomBatch(c.vocab_size, 13);
  const std::vector<int32_t> crossing{0, 20, 30, 48}, short_end{0, 24, 40};
  for (const auto* cu : {&crossing, &short_end}) {
    EXPECT_THROW(m.ForwardLoss(b.ids.data(), b.labels.data(), kB, kT, cu->data(),
                               static_cast<int64_t>(cu->size())),
                 Error);
  }
}

}  // namespace
}  // namespace replica
