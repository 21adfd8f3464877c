// The 6-step AdamW trajectories of tests/data/olmo3/{tiny-mha,tiny-gqa,tiny-yarn} (train.json +
// train.safetensors) reproduced by TrainStep — the trainer's own step code — within tolerances
// that hold for every GEMM kernel (OPENBLAS_CORETYPE Haswell, SkylakeX, Prescott, ...) and every
// micro-batch split, and that still fail each recipe mistake of the fixture README (tested below).
//
// Why the trajectory bounds are wider than a single step's: Adam's first update of an element is
// ±lr whatever the gradient's size, so an element whose gradient is at float32 noise level steps
// in the noise's direction. Such elements exist in every case: tiny-gqa is never clipped (the
// README measures 1.7e-6 … 1.6e-4 loss deviation across kernels); in tiny-yarn one embedding
// element (token 191, first seen at step 1, gradient about -5e-7 in a row of norm 0.17) takes
// the sign of the rounding under some kernels and micro-batch splits and moves the step-2 loss by
// 2.85e-5 (measured with OPENBLAS_CORETYPE=SkylakeX, and with Haswell in micro-batches of one row).
//   clipped cases (tiny-mha, tiny-yarn): per-step loss, ce_loss within 1e-4 absolute; z_loss
//   within 1e-5; grad_norm within 1e-3 relative; clip_coef within 5e-4 absolute; p99.9 of the
//   final |Δparams| below 1e-4.
//   tiny-gqa: losses within 3e-4, grad_norm within 1e-2 relative (the README's guidance), every
//   clip_coef exactly 1, p99.9 below 5e-5 (it reaches 3.1e-5 with the Prescott kernel).
//   Final parameters, every case: the median |Δ| of every tensor < 1e-5 (the README's robust
//   check: a correct run gives <= 5.4e-6 here), every element within sum(lr).
// The measured errors are printed, so the test log is the report.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/threads.h"
#include "ops/cpu/cpu_backend.h"
#include "hf/hf_weights.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "optim/adamw.h"
#include "optim/skip_step.h"
#include "train/grad_reducer.h"
#include "train/train_step.h"

namespace replica {
namespace {

struct Errors {
  double loss = 0, ce = 0, z = 0, gnorm_rel = 0, clip = 0;
  double p999 = 0, worst_median = 0, max_abs = 0;
  std::string worst_median_tensor;
  bool unclipped_step_clipped =
      false;  // a step the reference leaves unclipped (coef 1) was clipped
};

// The fixture README's recipe mistakes, injected to show the bounds catch them.
enum class Mistake { kNone, kNoZLoss, kNormsNotDecayed, kClippedAtOne };

Errors RunFixture(const std::string& name, int64_t micro_batch, int threads,
                  Mistake mistake = Mistake::kNone) {
  SetNumThreads(threads);
  const std::string dir = std::string(REPLICA_TEST_DATA) + "/olmo3/" + name;
  const ModelConfig config = ModelConfig::FromHfFile(dir + "/config.json");
  std::ifstream jf(dir + "/train.json");
  const nlohmann::json meta = nlohmann::json::parse(jf);
  const auto train = SafetensorsFile::Open(dir + "/train.safetensors");
  const int64_t B = meta["batch_size"], T = meta["seq_len"];
  if (micro_batch == 0) micro_batch = B;
  Olmo3Model model(config, micro_batch, T, CpuBackend());
  LoadHfWeights(dir + "/model.safetensors", model.layout(), model.params());

  AdamWConfig ac;
  ac.betas = {meta["betas"][0].get<double>(), meta["betas"][1].get<double>()};
  ac.eps = meta["eps"];
  ac.weight_decay = meta["weight_decay"];
  ac.max_grad_norm = meta["max_norm"];
  ac.no_decay = meta["no_decay_params"].get<std::vector<std::string>>();
  if (mistake == Mistake::kNormsNotDecayed) {
    for (const ParamView& v : model.layout().views()) {
      if (v.name.find("norm") != std::string::npos) ac.no_decay.push_back(v.name);
    }
  }
  if (mistake == Mistake::kClippedAtOne) ac.max_grad_norm = 1.0;
  AdamW adam(model.layout(), ac, CpuBackend());
  LocalGradReducer reducer;
  SkipStepRule skip(SkipStepConfig{});
  TrainStep step(model, reducer, adam, skip, micro_batch,
                 mistake == Mistake::kNoZLoss ? 0.0 : meta["z_loss_multiplier"].get<double>());

  const auto lr = train.ReadF64("lr");
  const auto loss = train.ReadF64("loss"), ce = train.ReadF64("ce_loss"),
             z = train.ReadF64("z_loss"), gnorm = train.ReadF64("grad_norm"),
             clip = train.ReadF64("clip_coef");
  Errors e;
  for (int k = 0; k < 6; ++k) {
    const auto ids64 = train.ReadI64("step" + std::to_string(k) + ".input_ids");
    const auto lab64 = train.ReadI64("step" + std::to_string(k) + ".labels");
    std::vector<int32_t> ids(ids64.begin(), ids64.end()), labels(lab64.begin(), lab64.end());
    const StepOutcome o = step.Run(ids.data(), labels.data(), B, T, lr[static_cast<size_t>(k)]);
    const size_t i = static_cast<size_t>(k);
    e.loss = std::max(e.loss, std::fabs(o.loss - loss[i]));
    e.ce = std::max(e.ce, std::fabs(o.ce_loss - ce[i]));
    e.z = std::max(e.z, std::fabs(o.z_loss - z[i]));
    e.gnorm_rel = std::max(e.gnorm_rel, std::fabs(o.grad_norm - gnorm[i]) / gnorm[i]);
    e.clip = std::max(e.clip, std::fabs(o.clip_coef - clip[i]));
    EXPECT_FALSE(o.skipped);
    if (clip[i] == 1.0 && o.clip_coef != 1.0) e.unclipped_step_clipped = true;
  }
  EXPECT_EQ(adam.step(), 6);

  std::vector<double> all;
  for (const ParamView& v : model.layout().views()) {
    const auto want = train.ReadF32("final." + v.name);
    const auto got = model.params().View(v);
    std::vector<double> d(got.size());
    for (size_t j = 0; j < d.size(); ++j) d[j] = std::fabs(double(got[j]) - double(want[j]));
    all.insert(all.end(), d.begin(), d.end());
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    if (d[d.size() / 2] > e.worst_median) {
      e.worst_median = d[d.size() / 2];
      e.worst_median_tensor = v.name;
    }
  }
  const size_t q = static_cast<size_t>(0.999 * static_cast<double>(all.size()));
  std::nth_element(all.begin(), all.begin() + q, all.end());
  e.p999 = all[q];
  e.max_abs = *std::max_element(all.begin(), all.end());
  std::printf(
      "%s (micro-batch %lld, %d threads): loss %.2e ce %.2e z %.2e grad_norm rel %.2e clip %.2e | "
      "final params p99.9 %.2e, worst per-tensor median %.2e (%s), max %.2e\n",
      name.c_str(), static_cast<long long>(micro_batch), threads, e.loss, e.ce, e.z, e.gnorm_rel,
      e.clip, e.p999, e.worst_median, e.worst_median_tensor.c_str(), e.max_abs);
  return e;
}

struct Tolerances {
  double loss, grad_norm_rel, clip, p999;
};
constexpr Tolerances kClipped{1e-4, 1e-3, 5e-4, 1e-4};
constexpr Tolerances kUnclipped{3e-4, 1e-2, 5e-4, 5e-5};

// Every bound the errors break, named; empty when the run is within all of them.
std::vector<std::string> Violations(const Errors& e, const Tolerances& t) {
  std::vector<std::string> v;
  auto check = [&](bool ok, const char* what) {
    if (!ok) v.emplace_back(what);
  };
  check(e.loss < t.loss, "loss");
  check(e.ce < t.loss, "ce_loss");
  check(e.z < 1e-5, "z_loss");
  check(e.gnorm_rel < t.grad_norm_rel, "grad_norm");
  check(e.clip < t.clip, "clip_coef");
  check(!e.unclipped_step_clipped, "clip_coef exactly 1 where unclipped");
  check(e.p999 < t.p999, "final params p99.9");
  check(e.worst_median < 1e-5, "per-tensor median");
  check(e.max_abs < 1.05e-2, "every element within sum(lr)");
  return v;
}

std::string Join(const std::vector<std::string>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

void ExpectWithinReadmeTolerances(const Errors& e, const Tolerances& t) {
  const auto v = Violations(e, t);
  EXPECT_TRUE(v.empty()) << "outside: " << Join(v) << " (worst median in " << e.worst_median_tensor
                         << ")";
}

TEST(FixtureTrajectory, TinyMha) {
  ExpectWithinReadmeTolerances(RunFixture("tiny-mha", 0, 1), kClipped);
}
TEST(FixtureTrajectory, TinyGqa) {
  ExpectWithinReadmeTolerances(RunFixture("tiny-gqa", 0, 2), kUnclipped);
}
// YaRN on the full-attention layer, T = 3 × original_max_position_embeddings; clipped every step.
TEST(FixtureTrajectory, TinyYarn) {
  ExpectWithinReadmeTolerances(RunFixture("tiny-yarn", 0, 2), kClipped);
}
// Micro-batches of one row (B leaves of the reduction tree) give the same math.
TEST(FixtureTrajectory, InMicroBatchesOfOneRow) {
  ExpectWithinReadmeTolerances(RunFixture("tiny-gqa", 1, 1), kUnclipped);
  ExpectWithinReadmeTolerances(RunFixture("tiny-mha", 1, 1), kClipped);
  ExpectWithinReadmeTolerances(RunFixture("tiny-yarn", 1, 1), kClipped);
}

// The bounds are wide enough for float32 noise and still fail every recipe mistake the README
// lists (z-loss left out, norm weights not decayed, tiny-gqa clipped at 1.0), in every case.
TEST(FixtureTrajectory, EachReadmeMistakeFallsOutsideTheBounds) {
  struct Case {
    const char* name;
    Mistake mistake;
    const char* what;
    Tolerances t;
  };
  const Case cases[] = {
      {"tiny-mha", Mistake::kNoZLoss, "z-loss left out", kClipped},
      {"tiny-mha", Mistake::kNormsNotDecayed, "norm weights not decayed", kClipped},
      {"tiny-gqa", Mistake::kNoZLoss, "z-loss left out", kUnclipped},
      {"tiny-gqa", Mistake::kNormsNotDecayed, "norm weights not decayed", kUnclipped},
      {"tiny-gqa", Mistake::kClippedAtOne, "clipped at 1.0", kUnclipped},
      {"tiny-yarn", Mistake::kNoZLoss, "z-loss left out", kClipped},
      {"tiny-yarn", Mistake::kNormsNotDecayed, "norm weights not decayed", kClipped},
  };
  for (const Case& c : cases) {
    const auto v = Violations(RunFixture(c.name, 0, 1, c.mistake), c.t);
    std::printf("  %s, %s: caught by %s\n", c.name, c.what,
                v.empty() ? "nothing" : Join(v).c_str());
    EXPECT_FALSE(v.empty()) << c.name << ": " << c.what << " passes the trajectory bounds";
  }
}

}  // namespace
}  // namespace replica
