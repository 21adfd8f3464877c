// `replica bench`: speed of one training step's forward + backward on a model shape, and its model
// FLOP utilisation against an fp32 GEMM measured in the same process (docs/design.md §5, §6).
// A step = what tests/data/bench-shapes/README.md and tools/torch_bench.py call one: zero the gradients,
// forward, fused LM head + CE + z-loss, backward, global grad-norm clip at 1.0 and AdamW (0.9, 0.95,
// eps 1e-8, weight decay 0.1 except the embedding); the forward+backward part is also reported on
// its own. Weights are random (init as training from scratch: N(0, 0.02²) truncated, norms 1),
// tokens and labels uniform; --warmup untimed steps, then the median of --steps steps.
// --precision bf16 feeds every matmul bf16 (docs/precision.md); MFU is then taken against the
// in-process bf16 GEMM rate (the peak of the mode in use), and against the nominal peak of the ISA
// (FLOP/cycle/core × measured clock × threads) in both modes.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "cli/command.h"
#include "core/clock.h"
#include "cli/compute_flags.h"
#include "core/error.h"
#include "core/log.h"
#include "core/plural.h"
#include "core/profile.h"
#include "core/threads.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "ops/cpu/cpu_bf16_backend.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/gemm_peak.h"
#include "train/init.h"
#include "optim/adamw.h"

namespace {

struct PeakGemm {
  int64_t size = 0;
  double tiled_gflops = 0;     // replica's deterministic tiled Sgemm (what the model uses)
  double openblas_gflops = 0;  // OpenBLAS with its own threading, same thread count
  double bf16_gflops = 0;      // replica's bf16 GEMM (bf16 precision only)
  replica::Precision precision = replica::Precision::kFp32;
  double peak() const {
    return precision == replica::Precision::kBf16 ? bf16_gflops
                                                  : std::max(tiled_gflops, openblas_gflops);
  }
};

// Best of 3 timed runs after one warm-up, of C = A B with n×n×n fp32 matrices (and the bf16 GEMM
// on the same operands in bf16 precision).
PeakGemm MeasurePeak(int64_t n, replica::Precision precision) {
  std::vector<float> a(n * n), b(n * n), c(n * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  const double flops = 2.0 * n * n * n;
  auto best_of_3 = [&](auto&& run) {
    run();
    double best = 1e300;
    for (int i = 0; i < 3; ++i) {
      auto t0 = replica::Clock::now();
      run();
      best = std::min(best, replica::SecondsSince(t0));
    }
    return flops / best / 1e9;
  };
  PeakGemm p;
  p.size = n;
  p.precision = precision;
  if (precision == replica::Precision::kBf16) {
    p.bf16_gflops = best_of_3([&] {
      replica::GemmBf16(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    });
  }
  p.tiled_gflops = best_of_3([&] {
    replica::Sgemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  });
  openblas_set_num_threads(replica::NumThreads());
  p.openblas_gflops = best_of_3([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
  });
  replica::UseSingleThreadedBlas();
  return p;
}

struct BenchArgs {
  std::string config_path;
  int64_t batch = 4, seq = 1024, steps = 3, warmup = 1, peak_size = 2048;
  uint64_t seed = 0;
  int threads = 0;
  bool json = false;
  replica::cli::ComputeFlags compute;
};

int RunBench(const BenchArgs& a) {
  using replica::Require;
  Require(a.batch >= 1 && a.seq >= 1, "--batch and --seq must be >= 1 (got {} and {})", a.batch,
          a.seq);
  Require(a.steps >= 1, "--steps must be >= 1 (got {})", a.steps);
  Require(a.warmup >= 0, "--warmup must be >= 0 (got {})", a.warmup);
  Require(a.peak_size >= 64, "--peak-size must be >= 64 (got {})", a.peak_size);
  const replica::ComputeSettings compute = a.compute.Apply();
  replica::SetNumThreads(a.threads);
  const replica::ModelConfig config = replica::ModelConfig::FromHfFile(a.config_path);
  const int64_t B = a.batch, T = a.seq, N = B * T;

  replica::Olmo3Model model(config, B, T, replica::BackendFor(compute.precision));
  replica::InitOptions init;
  init.seed = a.seed;
  replica::InitParams(model.layout(), model.params(), init);
  std::mt19937_64 rng(a.seed + 1);
  std::vector<int32_t> tokens(N), labels(N);
  for (int64_t i = 0; i < N; ++i) {
    tokens[i] = static_cast<int32_t>(rng() % static_cast<uint64_t>(config.vocab_size));
    labels[i] = static_cast<int32_t>(rng() % static_cast<uint64_t>(config.vocab_size));
  }

  replica::AdamWConfig adamw_config;  // the bench README's step: clip 1.0, AdamW 0.9/0.95/1e-8/0.1
  replica::AdamW adamw(model.layout(), adamw_config, model.backend());
  std::vector<double> times, fwd_bwd_times;
  double loss = 0, first_loss = 0;
  for (int64_t s = 0; s < a.warmup + a.steps; ++s) {
    const bool warm = s < a.warmup;
    if (s == a.warmup) replica::ProfileReset();  // profile the timed steps only
    auto t0 = replica::Clock::now();
    model.grads().Zero();
    replica::CrossEntropySums sums =
        model.ForwardBackward(tokens.data(), labels.data(), B, T, 1.0 / N, 1e-5);
    auto t1 = replica::Clock::now();
    const double norm = replica::GlobalGradNorm(model.grads(), model.backend());
    adamw.Step(model.params(), model.grads(), 3e-4,
               replica::ClipCoefficient(norm, adamw_config.max_grad_norm));
    const double dt = replica::SecondsSince(t0);
    loss = sums.ce_sum / static_cast<double>(sums.tokens);
    if (s == 0) first_loss = loss;
    REPLICA_LOG_INFO("bench step {}{}: {:.3f} s (forward+backward {:.3f} s), ce loss {:.4f}", s,
                     warm ? " (warm-up)" : "", dt, replica::SecondsBetween(t0, t1), loss);
    if (!warm) {
      times.push_back(dt);
      fwd_bwd_times.push_back(replica::SecondsBetween(t0, t1));
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t k = v.size();
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  };
  const double step = median(times);
  const double fwd_bwd = median(fwd_bwd_times);
  const replica::ProfileTotals profile = replica::ProfileSnapshot();
  double timed_total = 0;
  for (double t : times) timed_total += t;

  const PeakGemm peak = MeasurePeak(a.peak_size, compute.precision);
  const replica::NominalPeak nominal =
      replica::MeasureNominalPeak(compute.isa, compute.precision, replica::NumThreads());
  const double tokens_per_s = static_cast<double>(N) / step;
  const double flops_per_token = config.FlopsPerToken(T);
  const double achieved = flops_per_token * tokens_per_s / 1e9;
  const double mfu = achieved / peak.peak();
  const double mfu_nominal = achieved * 1e9 / nominal.flops_per_s;

  if (a.json) {
    nlohmann::ordered_json j;
    j["step_time_s"] = step;
    j["tokens_per_s"] = tokens_per_s;
    j["flops_per_token"] = flops_per_token;
    j["achieved_gflops"] = achieved;
    j["peak_gflops"] = peak.peak();
    j["mfu"] = mfu;
    j["mfu_nominal"] = mfu_nominal;
    j["nominal_peak"] = {{"gflops", nominal.flops_per_s / 1e9},
                         {"flops_per_cycle_per_core", nominal.flops_per_cycle_per_core},
                         {"clock_ghz", nominal.clock_hz / 1e9},
                         {"cores", nominal.cores}};
    j["precision"] = replica::PrecisionName(compute.precision);
    j["compute"] = compute.ToJson();
    j["batch"] = B;
    j["seq"] = T;
    j["steps"] = a.steps;
    j["threads"] = replica::NumThreads();
    j["step_times_s"] = times;
    j["forward_backward_s"] = fwd_bwd;
    j["optimizer_s"] = step - fwd_bwd;
    j["warmup"] = a.warmup;
    nlohmann::ordered_json prof;  // seconds per step by kind of work, mean over the timed steps
    for (int c = 0; c < static_cast<int>(replica::ProfileCategory::kCount); ++c) {
      const auto cat = static_cast<replica::ProfileCategory>(c);
      if (profile.Get(cat) > 0)
        prof[replica::ProfileCategoryName(cat)] = profile.Get(cat) / static_cast<double>(a.steps);
    }
    prof["unattributed"] = (timed_total - profile.Sum()) / static_cast<double>(a.steps);
    j["profile_s_per_step"] = prof;
    j["params"] = config.NumParams();
    j["ce_loss"] = first_loss;  // of the random initial weights (about ln V)
    j["last_ce_loss"] = loss;   // after the steps' AdamW updates on the same batch
    j["peak_gemm"] = {{"size", peak.size},
                      {"tiled_gflops", peak.tiled_gflops},
                      {"openblas_gflops", peak.openblas_gflops}};
    if (compute.precision == replica::Precision::kBf16) j["peak_gemm"]["bf16_gflops"] = peak.bf16_gflops;
    j["model_config"] = a.config_path;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("bench %s (%s): batch %ld x seq %ld, %s, %s after %ld warm-up\n",
                a.config_path.c_str(), replica::PrecisionName(compute.precision),
                static_cast<long>(B), static_cast<long>(T),
                replica::Plural(replica::NumThreads(), "thread").c_str(),
                replica::Plural(a.steps, "step").c_str(), static_cast<long>(a.warmup));
    std::printf("  step time (median)  %.4f s   (forward + backward %.4f s, clip + AdamW %.4f s)\n",
                step, fwd_bwd, step - fwd_bwd);
    std::printf("  tokens/s            %.1f\n", tokens_per_s);
    std::printf("  FLOPs/token         %.4g\n", flops_per_token);
    std::printf("  achieved            %.2f GFLOP/s\n", achieved);
    std::printf("  peak fp32 GEMM      %.2f GFLOP/s (%ld^3; tiled %.2f, OpenBLAS %.2f)\n",
                std::max(peak.tiled_gflops, peak.openblas_gflops), static_cast<long>(peak.size),
                peak.tiled_gflops, peak.openblas_gflops);
    if (compute.precision == replica::Precision::kBf16)
      std::printf("  peak bf16 GEMM      %.2f GFLOP/s (%s)\n", peak.bf16_gflops,
                  replica::Bf16GemmRouteName(replica::ActiveBf16GemmRoute()));
    std::printf("  MFU                 %.3f (of the %s GEMM peak)\n", mfu,
                replica::PrecisionName(compute.precision));
    std::printf("  MFU nominal         %.3f (of %.1f GFLOP/s: %g FLOP/cycle/core x %.2f GHz x %d)\n",
                mfu_nominal, nominal.flops_per_s / 1e9, nominal.flops_per_cycle_per_core,
                nominal.clock_hz / 1e9, nominal.cores);
    std::printf("time by kind over the %ld timed steps:\n%s", static_cast<long>(a.steps),
                replica::ProfileTable(profile, timed_total).c_str());
  }
  return 0;
}

replica::cli::CommandRegistration reg(
    "bench", "time training steps (fwd+bwd+clip+AdamW) on a model shape; MFU against a measured fp32 GEMM",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto a = std::make_shared<BenchArgs>();
      app.add_option("--model-config", a->config_path, "Hugging Face config.json of the shape")
          ->required();
      app.add_option("--batch", a->batch, "sequences per step")->capture_default_str();
      app.add_option("--seq", a->seq, "sequence length")->capture_default_str();
      app.add_option("--steps", a->steps, "timed steps (median reported)")->capture_default_str();
      app.add_option("--warmup", a->warmup, "untimed warm-up steps first")->capture_default_str();
      app.add_option("--threads", a->threads, "threads (default: all cores)");
      app.add_option("--seed", a->seed, "seed of the random weights and tokens")
          ->capture_default_str();
      app.add_option("--peak-size", a->peak_size, "n of the n×n×n GEMM that measures the peak")
          ->capture_default_str();
      app.add_flag("--json", a->json, "print JSON on stdout");
      a->compute.Add(app);
      return [a] { return RunBench(*a); };
    });

}  // namespace
