// `replica bench`: speed of one training step's forward + backward on a model shape, and its model
// FLOP utilisation against an fp32 GEMM measured in the same process (DESIGN.md §5, §6).
// A step = zero the gradients, forward, fused LM head + CE + z-loss, backward (no optimizer: it is
// a memory-bound pass over the parameters, timed elsewhere). Weights are random (init as training
// from scratch: N(0, 0.02²) truncated, norms 1), tokens and labels uniform; one warm-up step, then
// the median of --steps steps.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "core/log.h"
#include "core/threads.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "ops/cpu/gemm.h"
#include "train/init.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct PeakGemm {
  int64_t size = 0;
  double tiled_gflops = 0;     // replica's deterministic tiled Sgemm (what the model uses)
  double openblas_gflops = 0;  // OpenBLAS with its own threading, same thread count
  double peak() const { return std::max(tiled_gflops, openblas_gflops); }
};

// Best of 3 timed runs after one warm-up, of C = A B with n×n×n fp32 matrices.
PeakGemm MeasurePeak(int64_t n) {
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
      auto t0 = Clock::now();
      run();
      best = std::min(best, Seconds(t0, Clock::now()));
    }
    return flops / best / 1e9;
  };
  PeakGemm p;
  p.size = n;
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
  int64_t batch = 4, seq = 1024, steps = 3, peak_size = 2048;
  uint64_t seed = 0;
  int threads = 0;
  bool json = false;
};

int RunBench(const BenchArgs& a) {
  using replica::Require;
  Require(a.batch >= 1 && a.seq >= 1, "--batch and --seq must be >= 1 (got {} and {})", a.batch,
          a.seq);
  Require(a.steps >= 1, "--steps must be >= 1 (got {})", a.steps);
  Require(a.peak_size >= 64, "--peak-size must be >= 64 (got {})", a.peak_size);
  replica::SetNumThreads(a.threads);
  const replica::ModelConfig config = replica::ModelConfig::FromHfFile(a.config_path);
  const int64_t B = a.batch, T = a.seq, N = B * T;

  replica::Olmo3Model model(config, B, T);
  replica::InitOptions init;
  init.seed = a.seed;
  replica::InitParams(model.layout(), model.params(), init);
  std::mt19937_64 rng(a.seed + 1);
  std::vector<int32_t> tokens(N), labels(N);
  for (int64_t i = 0; i < N; ++i) {
    tokens[i] = static_cast<int32_t>(rng() % static_cast<uint64_t>(config.vocab_size));
    labels[i] = static_cast<int32_t>(rng() % static_cast<uint64_t>(config.vocab_size));
  }

  std::vector<double> times;
  double loss = 0;
  for (int64_t s = 0; s <= a.steps; ++s) {  // step 0 is the warm-up
    auto t0 = Clock::now();
    model.grads().Zero();
    replica::LossSums sums =
        model.ForwardBackward(tokens.data(), labels.data(), B, T, 1.0 / N, 1e-5);
    const double dt = Seconds(t0, Clock::now());
    loss = sums.ce_sum / static_cast<double>(sums.tokens);
    REPLICA_LOG_INFO("bench step {}{}: {:.3f} s, ce loss {:.4f}", s, s == 0 ? " (warm-up)" : "",
                     dt, loss);
    if (s > 0) times.push_back(dt);
  }
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const size_t k = sorted.size();
  const double step = k % 2 ? sorted[k / 2] : 0.5 * (sorted[k / 2 - 1] + sorted[k / 2]);

  const PeakGemm peak = MeasurePeak(a.peak_size);
  const double tokens_per_s = static_cast<double>(N) / step;
  const double flops_per_token = config.FlopsPerToken(T);
  const double achieved = flops_per_token * tokens_per_s / 1e9;
  const double mfu = achieved / peak.peak();

  if (a.json) {
    nlohmann::ordered_json j;
    j["step_time_s"] = step;
    j["tokens_per_s"] = tokens_per_s;
    j["flops_per_token"] = flops_per_token;
    j["achieved_gflops"] = achieved;
    j["peak_gflops"] = peak.peak();
    j["mfu"] = mfu;
    j["batch"] = B;
    j["seq"] = T;
    j["steps"] = a.steps;
    j["threads"] = replica::NumThreads();
    j["step_times_s"] = times;
    j["params"] = config.NumParams();
    j["ce_loss"] = loss;
    j["peak_gemm"] = {{"size", peak.size},
                      {"tiled_gflops", peak.tiled_gflops},
                      {"openblas_gflops", peak.openblas_gflops}};
    j["model_config"] = a.config_path;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("bench %s: batch %ld x seq %ld, %d threads, %ld steps after 1 warm-up\n",
                a.config_path.c_str(), static_cast<long>(B), static_cast<long>(T),
                replica::NumThreads(), static_cast<long>(a.steps));
    std::printf("  step time (median)  %.4f s   (forward + backward)\n", step);
    std::printf("  tokens/s            %.1f\n", tokens_per_s);
    std::printf("  FLOPs/token         %.4g\n", flops_per_token);
    std::printf("  achieved            %.2f GFLOP/s\n", achieved);
    std::printf("  peak fp32 GEMM      %.2f GFLOP/s (%ld^3; tiled %.2f, OpenBLAS %.2f)\n",
                peak.peak(), static_cast<long>(peak.size), peak.tiled_gflops,
                peak.openblas_gflops);
    std::printf("  MFU                 %.3f\n", mfu);
  }
  return 0;
}

replica::cli::CommandRegistration reg(
    "bench", "time forward+backward steps on a model shape; MFU against a measured fp32 GEMM",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto a = std::make_shared<BenchArgs>();
      app.add_option("--model-config", a->config_path, "Hugging Face config.json of the shape")
          ->required();
      app.add_option("--batch", a->batch, "sequences per step")->capture_default_str();
      app.add_option("--seq", a->seq, "sequence length")->capture_default_str();
      app.add_option("--steps", a->steps, "timed steps (after one warm-up)")->capture_default_str();
      app.add_option("--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
      app.add_option("--seed", a->seed, "seed of the random weights and tokens")
          ->capture_default_str();
      app.add_option("--peak-size", a->peak_size, "n of the n×n×n GEMM that measures the peak")
          ->capture_default_str();
      app.add_flag("--json", a->json, "print JSON to stdout");
      return [a] { return RunBench(*a); };
    });

}  // namespace
