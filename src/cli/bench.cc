// `replica bench`: speed of one training step's forward + backward on a model shape, and its model
// FLOP utilisation against an fp32 GEMM measured in the same process (docs/design.md §5, §6).
// A step = what tests/data/bench-shapes/README.md and tools/torch_bench.py call one: zero the gradients,
// forward, fused LM head + CE + z-loss, backward, global grad-norm clip at 1.0 and AdamW (0.9, 0.95,
// eps 1e-8, weight decay 0.1 except the embedding); the forward+backward part is also reported on
// its own. Weights are random (init as training from scratch: N(0, 0.02²) truncated, norms 1),
// tokens and labels uniform; --warmup untimed steps, then the median of --steps steps.
// The MFU denominator is the trainer's (ops/cpu/gemm_peak.h: the GEMM the model uses at
// --peak-size³, fastest of several trials, or the best this machine has recorded for the same key).
// --precision bf16 feeds every matmul bf16 (docs/precision.md); MFU is then taken against the bf16
// GEMM's peak (the mode in use), and against the nominal peak of the ISA (FLOP/cycle/core ×
// core clock × threads) in both modes; the clock is measured and checked against cpuid 0x16 and
// /proc/cpuinfo (ops/cpu/core_clock.h), and both the figure used and its references are printed.
// --doc-lens L1,L2,... packs every row with documents of those lengths (cycled, the one at a row's
// end cut there) and runs the step with their cu_doc_lens (intra-document masking, RoPE per
// document); FLOPs/token and MFU still count causal attention over whole rows.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/validators.h"
#include "core/clock.h"
#include "cli/compute_flags.h"
#include "core/error.h"
#include "core/log.h"
#include "core/plural.h"
#include "core/profile.h"
#include "core/threads.h"
#include "model/model_config.h"
#include "model/olmo3.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/gemm_peak.h"
#include "ops/host_copy.h"
#include "train/init.h"
#include "optim/adamw.h"
#include "run/model_shape.h"

namespace {

struct BenchArgs {
  std::string config_path;
  int64_t batch = 4, seq = 1024, steps = 3, warmup = 1, peak_size = 2048;
  uint64_t seed = 0;
  int threads = 0;
  bool json = false;
  std::string recompute = "none";
  std::string doc_lens;  // comma-separated document lengths, cycled over each row; empty: none
  replica::cli::ComputeFlags compute;
};

// cu_doc_lens of B rows of T packed with documents of the lengths in `spec` ("L1,L2,...", each
// >= 1), cycled from the first in every row, the last document of a row cut at its end.
std::vector<int32_t> PackedRows(const std::string& spec, int64_t B, int64_t T) {
  std::vector<int64_t> lens;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    replica::Require(used == item.size() && !item.empty() && v >= 1,
                     "--doc-lens: '{}' is not a document length >= 1 (in '{}')", item, spec);
    lens.push_back(v);
  }
  replica::Require(!lens.empty(), "--doc-lens: no lengths in '{}'", spec);
  std::vector<int32_t> cu{0};
  for (int64_t b = 0; b < B; ++b) {
    int64_t t = 0;
    for (size_t k = 0; t < T; k = (k + 1) % lens.size()) {
      t = std::min(T, t + lens[k]);
      cu.push_back(static_cast<int32_t>(b * T + t));
    }
  }
  return cu;
}

int RunBench(const BenchArgs& a) {
  using replica::Require;
  Require(a.batch >= 1 && a.seq >= 1, "--batch and --seq must be >= 1 (got {} and {})", a.batch,
          a.seq);
  Require(a.steps >= 1, "--steps must be >= 1 (got {})", a.steps);
  Require(a.warmup >= 0, "--warmup must be >= 0 (got {})", a.warmup);
  Require(a.peak_size >= 64, "--peak-size must be >= 64 (got {})", a.peak_size);
  const replica::ModelConfig config = replica::LoadModelShape(a.config_path, "--model-config");
  const replica::ComputeSettings compute = a.compute.Apply();
  replica::SetNumThreads(a.threads);
  const int64_t B = a.batch, T = a.seq, N = B * T;
  const std::vector<int32_t> cu =
      a.doc_lens.empty() ? std::vector<int32_t>{} : PackedRows(a.doc_lens, B, T);
  const int32_t* docs = cu.empty() ? nullptr : cu.data();
  const int64_t num_docs = static_cast<int64_t>(cu.size());

  const replica::Recompute recompute = replica::ParseRecompute(a.recompute, "--recompute");
  replica::Olmo3Model model(config, B, T, a.compute.SelectBackend(compute), recompute);
  replica::InitOptions init;
  init.seed = a.seed;
  replica::FillFloatsFromHost(model.backend(), model.params().data(), model.layout().total_floats(),
                              [&](float* host) {
                                replica::InitParamsRange(model.layout(), host, 0,
                                                         model.layout().total_floats(), init);
                              });
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
  int64_t conversions_before = model.backend().WeightCopiesMade();
  for (int64_t s = 0; s < a.warmup + a.steps; ++s) {
    const bool warm = s < a.warmup;
    if (s == a.warmup) {  // profile the timed steps only
      replica::ProfileReset();
      conversions_before = model.backend().WeightCopiesMade();
    }
    auto t0 = replica::Clock::now();
    const auto bracket = model.backend().BeginStep();  // bf16: one copy of each weight per step
    model.backend().Zero(model.grads().data(), static_cast<int64_t>(model.grads().size()));
    replica::CrossEntropySums sums =
        model.ForwardBackward(tokens.data(), labels.data(), B, T, 1.0 / N, 1e-5, docs, num_docs);
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
  const double weight_conversions_per_step =
      static_cast<double>(model.backend().WeightCopiesMade() - conversions_before) /
      static_cast<double>(a.steps);
  const double step = median(times);
  const double fwd_bwd = median(fwd_bwd_times);
  const replica::ProfileTotals profile = replica::ProfileSnapshot();
  double timed_total = 0;
  for (double t : times) timed_total += t;

  // The MFU denominator the trainer uses (ops/cpu/gemm_peak.h): the GEMM of the mode in use,
  // fastest of several trials, and the best this machine has recorded for the same key. In bf16
  // the fp32 rate is reported beside it.
  replica::GemmPeakOptions peak_options;
  peak_options.n = a.peak_size;
  peak_options.precision = compute.precision;
  const replica::GemmPeak peak = replica::MeasureGemmPeak(peak_options);
  replica::GemmPeak fp32_peak = peak;
  if (compute.precision != replica::Precision::kFp32) {
    peak_options.precision = replica::Precision::kFp32;
    fp32_peak = replica::MeasureGemmPeak(peak_options);
  }
  const replica::NominalPeak nominal =
      replica::MeasureNominalPeak(replica::ActiveIsa(), compute.precision, replica::NumThreads());
  if (!nominal.clock.note.empty())
    REPLICA_LOG_WARN("core clock: {}", nominal.clock.Describe());
  const double tokens_per_s = static_cast<double>(N) / step;
  // Packed rows: attention FLOPs of the keys each token sees within its document.
  const double flops_per_token =
      cu.empty() ? config.FlopsPerToken(T) : config.FlopsPerTokenOfDocuments(docs, num_docs);
  const double achieved = flops_per_token * tokens_per_s / 1e9;
  const double mfu = achieved * 1e9 / peak.flops_per_s;
  const double mfu_nominal = achieved * 1e9 / nominal.flops_per_s;

  if (a.json) {
    nlohmann::ordered_json j;
    j["step_time_s"] = step;
    j["tokens_per_s"] = tokens_per_s;
    j["flops_per_token"] = flops_per_token;
    j["achieved_gflops"] = achieved;
    j["peak_gflops"] = peak.flops_per_s / 1e9;
    j["mfu"] = mfu;
    j["mfu_nominal"] = mfu_nominal;
    j["nominal_peak"] = {{"gflops", nominal.flops_per_s / 1e9},
                         {"flops_per_cycle_per_core", nominal.flops_per_cycle_per_core},
                         {"clock_ghz", nominal.clock_hz / 1e9},
                         {"cores", nominal.cores}};
    auto ghz_or_null = [](double hz) {  // null: the reference is not reported
      return hz > 0 ? nlohmann::ordered_json(hz / 1e9) : nlohmann::ordered_json();
    };
    j["nominal_peak"]["clock"] = {{"ghz", nominal.clock.hz / 1e9},
                                  {"source", nominal.clock.source},
                                  {"measured_ghz", nominal.clock.measured_hz / 1e9},
                                  {"cpuid_base_ghz", ghz_or_null(nominal.clock.cpuid_base_hz)},
                                  {"cpuid_max_ghz", ghz_or_null(nominal.clock.cpuid_max_hz)},
                                  {"cpuinfo_ghz", ghz_or_null(nominal.clock.cpuinfo_hz)},
                                  {"note", nominal.clock.note}};
    j["precision"] = replica::PrecisionName(compute.precision);
    j["recompute"] = replica::RecomputeName(recompute);
    j["activation_arena_bytes"] = 4 * model.activation_arena_floats();
    j["compute"] = compute.ToJson();
    j["batch"] = B;
    j["seq"] = T;
    j["doc_lens"] = a.doc_lens.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(a.doc_lens);
    j["documents"] = cu.empty() ? B : num_docs - 1;
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
    j["bf16_weight_conversions_per_step"] = weight_conversions_per_step;
    j["params"] = config.NumParams();
    j["ce_loss"] = first_loss;  // of the random initial weights (about ln V)
    j["last_ce_loss"] = loss;   // after the steps' AdamW updates on the same batch
    j["peak_gemm"] = {{"size", peak.n},
                      {"fp32_gflops", fp32_peak.flops_per_s / 1e9},
                      {"measured_gflops", peak.measured_flops_per_s / 1e9},
                      {"median_trial_gflops", peak.median_trial_flops_per_s / 1e9},
                      {"cached_gflops", peak.cached_flops_per_s / 1e9},
                      {"cache", peak.cache_path}};
    if (replica::MatmulOperands(compute.precision) == replica::Precision::kBf16)
      j["peak_gemm"]["bf16_gflops"] = peak.flops_per_s / 1e9;
    j["model_config"] = a.config_path;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("bench %s (%s, recompute %s): batch %ld x seq %ld, %s, %s after %ld warm-up\n",
                a.config_path.c_str(), replica::PrecisionName(compute.precision),
                replica::RecomputeName(recompute),
                static_cast<long>(B), static_cast<long>(T),
                replica::Plural(replica::NumThreads(), "thread").c_str(),
                replica::Plural(a.steps, "step").c_str(), static_cast<long>(a.warmup));
    if (!cu.empty())
      std::printf("  packed rows         %ld documents of lengths %s (cycled per row)\n",
                  static_cast<long>(num_docs - 1), a.doc_lens.c_str());
    std::printf("  step time (median)  %.4f s   (forward + backward %.4f s, clip + AdamW %.4f s)\n",
                step, fwd_bwd, step - fwd_bwd);
    std::printf("  tokens/s            %.1f\n", tokens_per_s);
    std::printf("  FLOPs/token         %.4g\n", flops_per_token);
    std::printf("  achieved            %.2f GFLOP/s\n", achieved);
    std::printf("  peak fp32 GEMM      %s (%ld^3)\n", fp32_peak.Describe().c_str(),
                static_cast<long>(fp32_peak.n));
    if (replica::MatmulOperands(compute.precision) == replica::Precision::kBf16)
      std::printf("  peak bf16 GEMM      %s (%ld^3, %s)\n", peak.Describe().c_str(),
                  static_cast<long>(peak.n),
                  replica::Bf16GemmRouteName(replica::ActiveBf16GemmRoute()));
    std::printf("  MFU                 %.3f (of the %s GEMM peak)\n", mfu,
                replica::PrecisionName(compute.precision));
    std::printf("  MFU nominal         %.3f (of %.1f GFLOP/s: %g FLOP/cycle/core x %.2f GHz x %d)\n",
                mfu_nominal, nominal.flops_per_s / 1e9, nominal.flops_per_cycle_per_core,
                nominal.clock_hz / 1e9, nominal.cores);
    std::printf("  core clock          %s\n", nominal.clock.Describe().c_str());
    if (replica::MatmulOperands(compute.precision) == replica::Precision::kBf16)
      std::printf("  bf16 weight copies  %.0f per step (ops/cpu/bf16_weights.h)\n",
                  weight_conversions_per_step);
    std::printf("time by kind over the %ld timed steps:\n%s", static_cast<long>(a.steps),
                replica::ProfileTable(profile, timed_total).c_str());
  }
  return 0;
}

replica::cli::CommandRegistration reg(
    "bench", "time training steps (fwd+bwd+clip+AdamW) on a model shape; MFU against a measured fp32 GEMM",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto a = std::make_shared<BenchArgs>();
      app.add_option("--model-config", a->config_path,
                     "the shape: a Hugging Face config.json, a run config (YAML; its model "
                     "section), an OLMo-core config.json, or an HF model, checkpoint or run "
                     "directory")
          ->required();
      app.add_option("--batch", a->batch, "sequences per step")->capture_default_str();
      app.add_option("--seq", a->seq, "sequence length")->capture_default_str();
      app.add_option("--steps", a->steps, "timed steps (median reported)")->capture_default_str();
      app.add_option("--warmup", a->warmup, "untimed warm-up steps first")->capture_default_str();
      app.add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      app.add_option("--seed", a->seed, "seed of the random weights and tokens")
          ->capture_default_str();
      app.add_option("--peak-size", a->peak_size, "n of the n×n×n GEMM that measures the peak")
          ->capture_default_str();
      app.add_option("--recompute", a->recompute,
                     "activation recomputation: none (default) | mlp | full (docs/memory.md)");
      app.add_option("--doc-lens", a->doc_lens,
                     "pack each row with documents of these lengths (L1,L2,..., cycled; the last "
                     "cut at the row end) and mask attention to each document");
      app.add_flag("--json", a->json, "print JSON on stdout");
      a->compute.Add(app);
      return [a] { return RunBench(*a); };
    });

}  // namespace
