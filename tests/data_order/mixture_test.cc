// Mixtures: budgets follow the documented rule, the selection is deterministic for a seed (and
// matches numpy's shuffle), reads come from the right source, and a loader over a mixture
// resumes like any other dataset.
#include "data/mixture.h"

#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "data/loader.h"
#include "test_util.h"

namespace replica::data {
namespace {

using testing::ScratchDir;
using testing::WriteCountingFile;

constexpr int64_t kSeq = 4;

// Three sources; a token's value says which source, file and position it came from.
//   web:  two files, 50 + 31 instances (81), tails dropped
//   code: one file, 40 instances
//   math: one file, 5 instances (up-sampled below)
MixtureOptions MakeOptions(const ScratchDir& dir, uint64_t seed) {
  MixtureOptions o;
  o.seq_len = kSeq;
  o.vocab_size = 1'000'000;
  o.seed = seed;
  o.total_tokens = 400;
  o.sources = {
      {"web",
       {WriteCountingFile(dir, "web0.npy", 100000, 50 * kSeq + 2),
        WriteCountingFile(dir, "web1.npy", 200000, 31 * kSeq)},
       0.5, 0, 1.0},
      {"code", {WriteCountingFile(dir, "code.npy", 300000, 40 * kSeq + 3)}, 0.3, 0, 1.0},
      {"math", {WriteCountingFile(dir, "math.npy", 400000, 5 * kSeq)}, 0.2, 0, 3.0},
  };
  return o;
}

TEST(Mixture, BudgetsFollowTheRule) {
  ScratchDir dir("budget");
  auto opts = MakeOptions(dir, 9);
  opts.sources[2].max_repetition = 4.0;
  MixtureDataset mix(opts);
  const auto& plan = mix.plan();
  ASSERT_EQ(plan.size(), 3u);
  // floor(400 * w / 1.0) tokens -> floor(B / 4) instances.
  EXPECT_EQ(plan[0].budget_tokens, 200u);
  EXPECT_EQ(plan[0].selected_instances, 50u);
  EXPECT_EQ(plan[1].budget_tokens, 120u);
  EXPECT_EQ(plan[1].selected_instances, 30u);
  EXPECT_EQ(plan[2].budget_tokens, 80u);
  EXPECT_EQ(plan[2].selected_instances, 20u);  // 4 passes over 5 instances
  EXPECT_EQ(mix.num_instances(), 100u);
  for (const auto& p : plan) {
    EXPECT_LE(p.selected_instances * kSeq, p.budget_tokens);
    EXPECT_GT((p.selected_instances + 1) * kSeq, p.budget_tokens);
  }
}

TEST(Mixture, SelectionIsDeterministicAndReadsTheRightSource) {
  ScratchDir dir("determinism");
  auto opts = MakeOptions(dir, 9);
  opts.sources[2].max_repetition = 4.0;
  MixtureDataset a(opts), b(opts);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  std::map<std::pair<size_t, uint32_t>, int> count;
  std::vector<int32_t> buf(kSeq);
  for (uint64_t g = 0; g < a.num_instances(); ++g) {
    ASSERT_EQ(a.Resolve(g), b.Resolve(g));
    auto [s, i] = a.Resolve(g);
    ++count[{s, i}];
    // Source order in the numbering: web [0, 50), code [50, 80), math [80, 100).
    EXPECT_EQ(s, g < 50 ? 0u : g < 80 ? 1u : 2u) << g;
    a.ReadInstance(g, buf.data());
    int32_t base = s == 0 ? (i < 50 ? 100000 + int32_t(i) * kSeq : 200000 + int32_t(i - 50) * kSeq)
                          : s == 1 ? 300000 + int32_t(i) * kSeq : 400000 + int32_t(i) * kSeq;
    EXPECT_EQ(buf[0], base) << g;
  }
  // web takes 50 of 81 once each; code 30 of 40 once each; math 20 = 4 full passes over 5.
  for (auto& [key, n] : count) EXPECT_EQ(n, key.first == 2 ? 4 : 1);

  auto other = opts;
  other.seed = 10;
  MixtureDataset c(other);
  EXPECT_NE(c.fingerprint(), a.fingerprint());
  bool differs = false;
  for (uint64_t g = 0; g < a.num_instances(); ++g) differs |= a.Resolve(g) != c.Resolve(g);
  EXPECT_TRUE(differs);
}

TEST(Mixture, PartialSampleMatchesNumpy) {
  if (!testing::HaveDebianNumpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  ScratchDir dir("numpy");
  auto opts = MakeOptions(dir, 123456789);
  opts.sources[2].max_repetition = 3.0;
  opts.total_tokens = 0;
  opts.sources[0].tokens = 47 * kSeq + 3;  // 47 of 81
  opts.sources[1].tokens = 13 * kSeq;      // 13 of 40
  opts.sources[2].tokens = 12 * kSeq;      // 2 passes + 2 of 5
  for (auto& s : opts.sources) s.weight = 0;
  MixtureDataset mix(opts);
  std::string script = "import numpy as np\n";
  for (auto [s, n, r] : std::vector<std::tuple<int, int, int>>{{0, 81, 47}, {1, 40, 13}, {2, 5, 2}})
    script += "p = np.arange(" + std::to_string(n) + ", dtype=np.uint32)\n"
              "np.random.Generator(np.random.PCG64(123456789 * 2**32 + " + std::to_string(s) +
              ")).shuffle(p)\n"
              "print(' '.join(str(v) for v in sorted(p[:" + std::to_string(r) + "])))\n";
  auto lines = testing::RunPython(dir, script);
  ASSERT_EQ(lines.size(), 3u) << (lines.empty() ? "" : lines[0]);
  auto sampled = [&](size_t s, uint64_t from, uint64_t count) {
    std::string out;
    for (uint64_t g = from; g < from + count; ++g)
      out += (out.empty() ? "" : " ") + std::to_string(mix.Resolve(g).second);
    return out;
  };
  EXPECT_EQ(sampled(0, 0, 47), lines[0]);
  EXPECT_EQ(sampled(1, 47, 13), lines[1]);
  EXPECT_EQ(sampled(2, 60 + 10, 2), lines[2]);  // after two full passes over 5
  EXPECT_EQ(sampled(2, 60, 10), "0 1 2 3 4 0 1 2 3 4");
}

TEST(Mixture, BadConfigurationsAreClearErrors) {
  ScratchDir dir("bad");
  auto opts = MakeOptions(dir, 1);
  try {
    MixtureDataset m(opts);  // math needs 20 of 5 with max_repetition 3
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'math'"), std::string::npos) << e.what();
  }
  opts.sources[2].max_repetition = 4.0;
  auto o = opts;
  o.sources[1].tokens = 10;
  EXPECT_THROW(MixtureDataset{o}, Error);  // both tokens and weights
  o = opts;
  o.sources[1].weight = 0.001;  // budget < one instance
  EXPECT_THROW(MixtureDataset{o}, Error);
  o = opts;
  o.sources[1].name = "web";
  EXPECT_THROW(MixtureDataset{o}, Error);
  o = opts;
  o.sources[0].max_repetition = 0.5;
  EXPECT_THROW(MixtureDataset{o}, Error);
  o = opts;
  o.total_tokens = 0;
  EXPECT_THROW(MixtureDataset{o}, Error);  // no per-source tokens
}

TEST(Mixture, LoaderResumesAndStateNamesTheChangedSource) {
  ScratchDir dir("resume");
  auto opts = MakeOptions(dir, 3);
  opts.sources[2].max_repetition = 4.0;
  auto mix = std::make_shared<MixtureDataset>(opts);
  constexpr uint64_t kBatch = 8;  // 100 instances -> 12 batches per epoch
  DataLoader ref(mix, {5, kBatch, 0, 1, 0, 1});
  std::vector<std::vector<int32_t>> expect;
  for (int s = 0; s < 20; ++s) expect.push_back(ref.Next().input_ids);

  DataLoader first(mix, {5, kBatch, 0, 1, 0, 1});
  for (int s = 0; s < 9; ++s) first.Next();
  nlohmann::json saved = {{"loader", first.state().ToJson()}, {"mixture", mix->StateJson()}};

  auto again = std::make_shared<MixtureDataset>(opts);
  again->VerifyState(saved["mixture"]);
  // World 2 after the resume: reassemble the strided halves.
  DataLoader r0(again, {5, kBatch, 0, 2, 0, 1}), r1(again, {5, kBatch, 1, 2, 0, 1});
  r0.Restore(LoaderState::FromJson(saved["loader"]));
  r1.Restore(LoaderState::FromJson(saved["loader"]));
  for (int s = 9; s < 20; ++s) {
    RankBatch a = r0.Next(), b = r1.Next();
    std::vector<int32_t> whole(kBatch * kSeq);
    for (size_t k = 0; k < 4; ++k) {
      std::copy_n(a.input_ids.begin() + k * kSeq, kSeq, whole.begin() + (2 * k) * kSeq);
      std::copy_n(b.input_ids.begin() + k * kSeq, kSeq, whole.begin() + (2 * k + 1) * kSeq);
    }
    EXPECT_EQ(whole, expect[s]) << "step " << s;
  }

  WriteCountingFile(dir, "code.npy", 300001, 40 * kSeq + 3);  // same size, new content
  MixtureDataset changed(opts);
  EXPECT_NE(changed.fingerprint(), mix->fingerprint());
  try {
    changed.VerifyState(saved["mixture"]);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'code'"), std::string::npos) << e.what();
  }
  DataLoader stale(std::make_shared<MixtureDataset>(opts), {5, kBatch, 0, 1, 0, 1});
  EXPECT_THROW(stale.Restore(LoaderState::FromJson(saved["loader"])), Error);
}

}  // namespace
}  // namespace replica::data
