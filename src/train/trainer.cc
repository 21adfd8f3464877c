#include "train/trainer.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "core/clock.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/profile.h"
#include "core/log.h"
#include "core/threads.h"
#include "data/loader.h"
#include "hf/hf_weights.h"
#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/writer.h"
#include "core/fault.h"
#include "ops/cpu/gemm_peak.h"
#include "train/init.h"
#include "train/non_finite_guard.h"
#include "run/metrics_writer.h"
#include "run/run_lock.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"
#include "train/train_data.h"
#include "train/train_state.h"

namespace replica {
namespace fs = std::filesystem;

namespace {

std::string Duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const int64_t t = static_cast<int64_t>(s + 0.5);
  if (t >= 3600) return fmt::format("{}h{:02}m", t / 3600, (t / 60) % 60);
  if (t >= 60) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}s", t);
}

// Lines for the user: stderr and RUN/train.log. The progress line is redrawn in place on a
// terminal and printed as ordinary lines otherwise.
class RunLog {
 public:
  // enabled = false (data-parallel ranks other than 0): prints and records nothing.
  RunLog(const std::string& path, bool enabled)
      : tty_(isatty(fileno(stderr)) != 0), enabled_(enabled) {
    if (!enabled_) return;
    file_ = std::fopen(path.c_str(), "a");
    if (!file_) REPLICA_LOG_WARN("cannot append to {}: {}", path, std::strerror(errno));
  }
  ~RunLog() {
    EndProgress();
    if (file_) std::fclose(file_);
  }
  void Line(const std::string& s) {
    if (!enabled_) return;
    EndProgress();
    std::fprintf(stderr, "%s\n", s.c_str());
    ToFile(s);
  }
  void Progress(const std::string& s, bool to_file) {
    if (!enabled_) return;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", s.c_str());
      std::fflush(stderr);
      live_ = true;
    } else {
      std::fprintf(stderr, "%s\n", s.c_str());
    }
    if (to_file) ToFile(s);
  }
  bool tty() const { return enabled_ && tty_; }
  void EndProgress() {
    if (live_) std::fprintf(stderr, "\n");
    live_ = false;
  }

 private:
  void ToFile(const std::string& s) {
    if (!file_) return;
    std::fprintf(file_, "%s\n", s.c_str());
    std::fflush(file_);
  }
  std::FILE* file_ = nullptr;
  bool tty_, enabled_, live_ = false;
};

bool IsHfModelDir(const std::string& path) {
  return fs::is_directory(path) && fs::exists(fs::path(path) / "config.json") &&
         !fs::exists(fs::path(path) / kManifestFile) &&
         !fs::exists(fs::path(path) / kCheckpointsSubdir);
}

// Why a resume is refused: the trajectory keys that differ from the run's recorded config.
std::string DescribeDifferences(const std::string& run_dir, const RunConfig& now) {
  const std::string path = (fs::path(run_dir) / "config.yaml").string();
  if (!fs::exists(path)) return "(the run's config.yaml is missing, so the keys are unknown)";
  try {
    const RunConfig before = RunConfig::Load(path);
    std::string keys;
    for (const std::string& k : TrajectoryDifferences(before, now))
      keys += (keys.empty() ? "" : ", ") + k;
    return keys.empty() ? "(no key differs from config.yaml; the checkpoint is from another run)"
                        : keys;
  } catch (const Error& e) {
    return fmt::format("(config.yaml cannot be read: {})", e.what());
  }
}

void WriteRunConfig(const std::string& run_dir, const RunConfig& c) {
  WriteFileAtomic((fs::path(run_dir) / "config.yaml").string(), c.Canonical());
  // sha256sum format: `sha256sum -c config.sha256` in RUN verifies config.yaml.
  WriteFileAtomic((fs::path(run_dir) / "config.sha256").string(), c.Hash() + "  config.yaml\n");
}

}  // namespace

nlohmann::json TrainSummary::ToJson() const {
  return {{"run_dir", run_dir},
          {"start_step", start_step},
          {"end_step", end_step},
          {"resumed_from", resumed_from},
          {"skipped_steps", skipped_steps},
          {"first_loss", first_loss},
          {"last_loss", last_loss},
          {"wall_s", wall_s},
          {"mean_tokens_per_s", mean_tokens_per_s},
          {"mean_mfu", mean_mfu},
          {"peak_flops", peak_flops},
          {"last_checkpoint", last_checkpoint},
          {"step_profile", step_profile}};
}

TrainSummary Train(const TrainerOptions& opt) {
  const RunConfig& cfg = opt.config;
  const auto wall_start = Clock::now();
  Require(opt.world >= 1 && opt.rank >= 0 && opt.rank < opt.world,
          "trainer: rank {} of world {} is not a valid rank", opt.rank, opt.world);
  Require(opt.world == 1 || opt.reducer != nullptr,
          "trainer: world {} needs a rank reducer (data parallelism, src/dist)", opt.world);
  const int64_t I = cfg.train.global_batch_instances, T = cfg.data.seq_len;
  const int64_t mu = cfg.train.micro_batch_instances;
  Require(I % opt.world == 0 && (I / opt.world) % mu == 0,
          "trainer: the global batch ({}) must split into {} ranks of whole micro-batches of {}", I,
          opt.world, mu);
  const int64_t local_instances = I / opt.world;
  const int64_t local_micro = local_instances / mu;

  SetNumThreads(static_cast<int>(cfg.train.threads));
  // Data first: a bad file list fails before anything is written.
  const std::shared_ptr<const data::InstanceDataset> dataset = OpenTrainingData(cfg);
  data::LoaderOptions lopt;
  lopt.seed = static_cast<uint64_t>(cfg.data.seed);
  lopt.global_batch_instances = static_cast<uint64_t>(I);
  lopt.rank = static_cast<uint64_t>(opt.rank);
  lopt.world = static_cast<uint64_t>(opt.world);
  data::DataLoader loader(dataset, lopt);
  Require(loader.batches_per_epoch() > 0,
          "data: {} instances of {} tokens in {}, fewer than one global batch of {}",
          dataset->num_instances(), T, DescribeTrainingData(cfg), I);

  // Data parallelism: rank 0 alone writes the run directory (log, config, metrics, checkpoints),
  // and holds it against a second trainer from before its first write to its exit.
  const bool writer = opt.rank == 0;
  fs::create_directories(opt.run_dir);
  std::optional<RunDirLock> run_lock;
  if (writer) run_lock.emplace(RunDirLock::Acquire(opt.run_dir));
  RunLog log((fs::path(opt.run_dir) / "train.log").string(), writer);
  TrainSummary summary;
  summary.run_dir = opt.run_dir;

  // --- where do we start? ---
  std::optional<CheckpointInfo> resume = FindLatestValid(opt.run_dir);
  std::optional<Checkpoint> start_ckpt;
  bool restore_trainer_state = false;
  if (resume) {
    start_ckpt = Checkpoint::Open(resume->dir, /*verify=*/false);
    Require(start_ckpt->has_state() && start_ckpt->has_optimizer(),
            "{}: a run checkpoint must hold state.json and optim.safetensors", resume->dir);
    restore_trainer_state = true;
    summary.resumed_from = resume->dir;
  } else if (!cfg.init.from_checkpoint.empty() && !IsHfModelDir(cfg.init.from_checkpoint)) {
    const CheckpointInfo info = ResolveCheckpoint(cfg.init.from_checkpoint);
    start_ckpt = Checkpoint::Open(info.dir, /*verify=*/false);
    restore_trainer_state = !cfg.init.reset_step;
    Require(!restore_trainer_state || start_ckpt->has_state(),
            "init.from_checkpoint: {} has no trainer state (state.json); set init.reset_step=true",
            info.dir);
    Require(!cfg.init.load_optimizer || start_ckpt->has_optimizer(),
            "init.from_checkpoint: {} has no optimizer state (optim.safetensors); set "
            "init.load_optimizer=false to start Adam from zero",
            info.dir);
  }
  std::optional<TrainState> saved;
  if (restore_trainer_state) {
    saved = TrainState::FromJson(start_ckpt->state(), start_ckpt->dir() + "/" + kStateFile);
    if (resume && saved->trajectory_hash != cfg.TrajectoryHash()) {
      Fail("{}: the checkpoint at step {} belongs to a run whose training math differs from this "
           "config in: {}. Use a new --run-dir, or restore those keys",
           opt.run_dir, saved->step, DescribeDifferences(opt.run_dir, cfg));
    }
    if (resume && saved->micro_batch_instances != mu)
      log.Line(fmt::format("note: micro-batch size changed from {} to {}: the continuation is the "
                           "same math but not bit-identical to an uninterrupted run",
                           saved->micro_batch_instances, mu));
  }
  if (writer) WriteRunConfig(opt.run_dir, cfg);

  // --- model and optimizer ---
  Olmo3Model model(cfg.model, mu, T);
  const ParamLayout& layout = model.layout();
  AdamW adam(layout, cfg.optim.AdamW());
  SkipStepRule skip(cfg.train.skip_step);
  int64_t step = 0, tokens = 0;
  if (start_ckpt) {
    start_ckpt->LoadParams(layout, model.params());
    if (resume || cfg.init.load_optimizer)
      adam.set_step(start_ckpt->LoadOptimizer(layout, adam.m(), adam.v()));
  } else if (!cfg.init.from_checkpoint.empty()) {
    LoadHfWeights(cfg.init.from_checkpoint, layout, model.params());
    Require(!cfg.init.load_optimizer,
            "init.from_checkpoint: {} is a Hugging Face model directory without optimizer state; "
            "set init.load_optimizer=false",
            cfg.init.from_checkpoint);
  } else {
    InitParams(layout, model.params(),
               {.seed = cfg.init.seed, .std = cfg.model.initializer_range});
  }
  if (saved) {
    step = saved->step;
    tokens = saved->tokens;
    loader.Restore(data::LoaderState::FromJson(saved->loader));
    skip.Restore(saved->skip_losses, saved->skip_grad_norms);
    Require(saved->adam_step == adam.step(),
            "{}: state.json says Adam step {}, optim.safetensors says {}", start_ckpt->dir(),
            saved->adam_step, adam.step());
  }
  if (opt.reducer) opt.reducer->AdoptOptimizer(layout, adam);  // ZeRO-1: keep this rank's shard
  summary.start_step = summary.end_step = step;
  if (resume) {
    log.Line(fmt::format("resuming from {} (step {}, {} tokens)", resume->dir, step, tokens));
  } else if (start_ckpt) {
    log.Line(fmt::format("starting from {} ({}): weights{}{}", start_ckpt->dir(),
                         saved ? "continuing its step counter" : "fresh step counter",
                         cfg.init.load_optimizer ? ", Adam state" : "",
                         saved ? ", data position" : ""));
  } else if (!cfg.init.from_checkpoint.empty()) {
    log.Line(fmt::format("starting from the weights of {}", cfg.init.from_checkpoint));
  } else {
    log.Line(fmt::format("fresh start: {} parameters, init seed {}", cfg.model.NumParams(),
                         cfg.init.seed));
  }
  if (step >= cfg.train.max_steps) {
    log.Line(fmt::format("nothing to do: the run is at step {} and train.max_steps is {}", step,
                         cfg.train.max_steps));
    return summary;
  }

  // --- outputs ---
  std::optional<MetricsWriter> metrics;
  std::optional<CheckpointWriter> checkpoints;
  if (writer) {
    metrics.emplace(opt.run_dir, resume ? std::optional<int64_t>(step) : std::nullopt);
    checkpoints.emplace(CheckpointWriterOptions{.run_dir = opt.run_dir,
                                                .keep = static_cast<int>(cfg.checkpoint.keep),
                                                .background = true});
    checkpoints->Reserve(layout);  // first-touch the snapshot memory now, not mid-run
  }
  fault::FaultSpec fspec;
  if (cfg.fault.kill_at_step > 0) fspec.kill_at_step = cfg.fault.kill_at_step;
  if (cfg.fault.kill_in_checkpoint > 0) fspec.kill_in_checkpoint = cfg.fault.kill_in_checkpoint;
  fspec.checkpoint_phase = cfg.fault.kill_in_checkpoint_phase == "before_done"
                               ? fault::CheckpointPhase::kBeforeDone
                               : fault::CheckpointPhase::kFiles;
  fault::Configure(fspec);

  const double flops_per_token = cfg.model.FlopsPerToken(T);
  double peak = opt.peak_flops;
  if (peak <= 0) peak = MeasureGemmPeak().flops_per_s;
  summary.peak_flops = peak;
  log.Line(fmt::format(
      "training {} -> {}: {} params, {} x {} tokens per step ({} micro-batches of {}{}), {} "
      "threads, {:.2f} GFLOP/token, GEMM peak {:.1f} GFLOP/s",
      step, cfg.train.max_steps, cfg.model.NumParams(), I, T, local_micro, mu,
      opt.world > 1 ? fmt::format(" on each of {} ranks", opt.world) : std::string(), NumThreads(),
      flops_per_token / 1e9, peak / 1e9));

  TrainStep train_step(model, adam, skip, mu, cfg.train.z_loss_multiplier, opt.reducer);
  NonFiniteGuard non_finite;
  double sum_tps = 0, sum_mfu = 0, sum_step_s = 0;
  int64_t steps_run = 0;
  const auto loop_start = Clock::now();
  ProfileTotals step_profile;  // time by kind inside the timed steps (evals and saves excluded)

  auto save_checkpoint = [&](int64_t s) {
    TrainState st;
    st.step = s;
    st.tokens = tokens;
    st.loader = loader.state().ToJson();
    st.skip_losses.assign(skip.losses().begin(), skip.losses().end());
    st.skip_grad_norms.assign(skip.grad_norms().begin(), skip.grad_norms().end());
    st.init_seed = cfg.init.seed;
    st.config_hash = cfg.Hash();
    st.trajectory_hash = cfg.TrajectoryHash();
    st.world_size = opt.world;
    st.micro_batch_instances = mu;
    if (opt.reducer) opt.reducer->GatherOptimizer(adam);  // collective: full m, v on rank 0
    if (!checkpoints) return;
    st.adam_step = adam.step();
    checkpoints->Save(s, layout, model.params(), adam.m(), adam.v(), adam.step(), st.ToJson(),
                     cfg.model.ToHfJson());
    summary.last_checkpoint = (fs::path(checkpoints->checkpoints_dir()) / CheckpointDirName(s)).string();
  };

  while (step < cfg.train.max_steps) {
    const int64_t s = step + 1;
    const auto t0 = Clock::now();
    const ProfileTotals p0 = ProfileSnapshot();
    const data::RankBatch batch = [&] {
      ProfileScope scope(ProfileCategory::kData);
      return loader.Next();
    }();
    if (opt.on_batch) {  // leak guard
      ProfileScope scope(ProfileCategory::kLeakGuard);
      opt.on_batch(s, batch.instances, batch.input_ids.data(),
                   static_cast<int64_t>(batch.instances.size()), T);
    }

    const double lr = LrAt(cfg.optim.schedule, cfg.optim.lr, s);
    const StepOutcome o = train_step.Run(batch.input_ids.data(), batch.labels.data(),
                                         local_instances, T, lr);
    const double loss = o.loss, grad_norm = o.grad_norm;
    const bool proceed = !o.skipped;
    step = s;
    tokens += I * T;
    const double dt = SecondsSince(t0);
    if (steps_run > 0) {  // the first step (one-time allocations, cold caches) is left out
      const ProfileTotals p1 = ProfileSnapshot();
      for (size_t k = 0; k < p1.seconds.size(); ++k)
        step_profile.seconds[k] += p1.seconds[k] - p0.seconds[k];
      sum_step_s += dt;
    }
    const double tps = static_cast<double>(I * T) / dt;
    // R ranks run on R times the hardware whose GEMM rate `peak` is (one process's).
    const double mfu = flops_per_token * tps / (peak * static_cast<double>(opt.world));
    ++steps_run;
    sum_tps += tps;
    sum_mfu += mfu;
    if (!proceed) ++summary.skipped_steps;
    if (steps_run == 1) summary.first_loss = loss;
    summary.last_loss = loss;
    summary.end_step = s;

    if (metrics) metrics->Write(EncodeNonFinite({{"step", s},
                                                 {"loss", loss},
                                                 {"ce_loss", o.ce_loss},
                                                 {"z_loss", o.z_loss},
                                                 {"grad_norm", grad_norm},
                                                 {"clip_coef", o.clip_coef},
                                                 {"lr", lr},
                                                 {"tokens", tokens},
                                                 {"step_time_s", dt},
                                                 {"tokens_per_s", tps},
                                                 {"tokens_per_s_per_rank",
                                                  tps / static_cast<double>(opt.world)},
                                                 {"mfu", mfu},
                                                 {"skipped", !proceed},
                                                 {"non_finite", o.non_finite}}));
    non_finite.Observe(s, loss, grad_norm);
    if (o.non_finite)
      log.Line(fmt::format("step {}: non-finite loss {} or grad norm {}: update not applied ({} in "
                           "a row; the run stops at {})",
                           s, loss, grad_norm, non_finite.consecutive(),
                           NonFiniteGuard::kMaxConsecutive));
    else if (!proceed)
      log.Line(fmt::format("step {}: skipped the update (loss {:.4f}, grad norm {:.4f} beyond "
                           "{} sigma of the last {} steps)",
                           s, loss, grad_norm, cfg.train.skip_step.sigma,
                           cfg.train.skip_step.window));
    // A terminal gets the line redrawn every step; logs get it every log_interval steps.
    const bool at_interval =
        s % cfg.train.log_interval == 0 || s == cfg.train.max_steps || steps_run == 1;
    if (opt.progress && (at_interval || log.tty())) {
      const double elapsed = SecondsSince(loop_start);
      const double eta = elapsed / static_cast<double>(steps_run) *
                         static_cast<double>(cfg.train.max_steps - s);
      log.Progress(fmt::format("step {}/{} | loss {:.4f} | grad norm {:.3f} | lr {:.3g} | {:.0f} "
                               "tok/s | MFU {:.1f}% | ETA {}",
                               s, cfg.train.max_steps, loss, grad_norm, lr, tps, 100 * mfu,
                               Duration(eta)),
                   /*to_file=*/at_interval);
    }

    non_finite.StopIfDiverged();  // before this step's eval and checkpoint
    const bool last = s == cfg.train.max_steps;
    const bool eval_due = opt.eval && writer &&  // rank 0 evaluates; the others wait for it
                          ((cfg.eval.interval > 0 && s % cfg.eval.interval == 0) || last);
    if (eval_due) {
      const auto e0 = Clock::now();
      ProfileScope scope(ProfileCategory::kEval);
      nlohmann::json result = opt.eval(s, model);
      if (result.is_object() && !result.empty()) {
        metrics->Write(EncodeNonFinite({{"step", s}, {"eval", result}}));
        log.Line(fmt::format("step {}: eval ({:.1f}s) {}", s, SecondsSince(e0),
                             result.dump()));
      }
    }
    fault::MaybeKill(fault::FaultPoint::kStep, s);
    if ((cfg.checkpoint.interval > 0 && s % cfg.checkpoint.interval == 0) || last) {
      ProfileScope scope(ProfileCategory::kCheckpoint);
      save_checkpoint(s);
    }
  }
  if (checkpoints) checkpoints->Finish();
  log.EndProgress();

  summary.wall_s = SecondsSince(wall_start);
  summary.mean_tokens_per_s = steps_run ? sum_tps / static_cast<double>(steps_run) : 0;
  summary.mean_mfu = steps_run ? sum_mfu / static_cast<double>(steps_run) : 0;
  log.Line(fmt::format(
      "done: steps {} -> {} in {}, loss {:.4f} -> {:.4f}, {:.0f} tok/s, MFU {:.1f}% (of {:.1f} "
      "GFLOP/s GEMM peak), {} skipped; metrics {}, last checkpoint {}",
      summary.start_step, summary.end_step, Duration(summary.wall_s), summary.first_loss,
      summary.last_loss, summary.mean_tokens_per_s, 100 * summary.mean_mfu, peak / 1e9,
      summary.skipped_steps, metrics ? metrics->path() : std::string("(rank 0)"),
      summary.last_checkpoint));
  if (steps_run > 1) {
    summary.step_profile = {{"steps", steps_run - 1}, {"step_seconds", sum_step_s}};
    for (int k = 0; k < static_cast<int>(ProfileCategory::kCount); ++k) {
      const auto c = static_cast<ProfileCategory>(k);
      if (step_profile.Get(c) > 0) summary.step_profile[ProfileCategoryName(c)] = step_profile.Get(c);
    }
    log.Line(fmt::format("time by kind inside training steps {}..{} (this process; the first "
                         "step is left out):\n{}",
                         summary.start_step + 2, summary.end_step,
                         ProfileTable(step_profile, sum_step_s)));
  }
  return summary;
}

}  // namespace replica
