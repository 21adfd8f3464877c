#include "train/trainer.h"

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>

#include "checkpoint/format.h"
#include "checkpoint/reader.h"
#include "checkpoint/sharded_writer.h"
#include "core/atomic_file.h"
#include "core/byte_size.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/fault.h"
#include "core/interrupt.h"
#include "core/log.h"
#include "core/plural.h"
#include "core/profile.h"
#include "core/threads.h"
#include "data/loader.h"
#include "hf/hf_weights.h"
#include "ops/device.h"
#include "ops/host_copy.h"
#include "ops/registry.h"
#include "optim/optimizer.h"
#include "train/non_finite_guard.h"
#include "run/run_lock.h"
#include "optim/schedule.h"
#include "optim/skip_step.h"
#include "run/metrics_writer.h"
#include "run/context_parallel.h"
#include "run/plan.h"
#include "train/grad_reducer.h"
#include "train/init.h"
#include "train/rank_batch_step.h"
#include "train/run_log.h"
#include "train/run_summary.h"
#include "train/train_data.h"
#include "train/train_state.h"
#include "train/train_step.h"

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
    const std::string keys = DescribeTrajectoryDifferences(before, now);
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

// One rank's share of the global batch.
struct BatchShape {
  int64_t global_instances = 0;  // I
  int64_t seq_len = 0;           // T
  int64_t micro = 0;             // μ, instances per micro-batch
  int64_t local_instances = 0;   // I / world
  int64_t local_micro = 0;       // micro-batches per rank and step
};

BatchShape CheckBatchShape(const TrainerOptions& opt) {
  const RunConfig& cfg = opt.config;
  Require(opt.world >= 1 && opt.rank >= 0 && opt.rank < opt.world,
          "trainer: rank {} of world {} is not a valid rank", opt.rank, opt.world);
  Require(opt.world == 1 || opt.reducer != nullptr,
          "trainer: world {} needs a gradient reducer (data parallelism, src/parallel)", opt.world);
  Require(opt.world == 1 || opt.checkpoint_group != nullptr,
          "trainer: world {} needs a checkpoint group (src/parallel)", opt.world);
  BatchShape b;
  b.global_instances = cfg.train.global_batch_instances;
  b.seq_len = cfg.data.seq_len;
  b.micro = cfg.train.micro_batch_instances;
  Require(b.global_instances % opt.world == 0 && (b.global_instances / opt.world) % b.micro == 0,
          "trainer: the global batch ({}) must split into {} ranks of whole micro-batches of {}",
          b.global_instances, opt.world, b.micro);
  b.local_instances = b.global_instances / opt.world;
  b.local_micro = b.local_instances / b.micro;
  return b;
}

data::LoaderOptions LoaderOptionsFor(const TrainerOptions& opt) {
  data::LoaderOptions l;
  l.seed = static_cast<uint64_t>(opt.config.data.seed);
  l.global_batch_instances = static_cast<uint64_t>(opt.config.train.global_batch_instances);
  l.rank = static_cast<uint64_t>(opt.rank);
  l.world = static_cast<uint64_t>(opt.world);
  return l;
}

// Where a run starts: the newest valid checkpoint of its own directory (resume), else
// init.from_checkpoint (a checkpoint or run directory; a Hugging Face model directory is read as
// weights only, later), else a fresh init.
struct StartPoint {
  std::optional<CheckpointInfo> resume;   // the run's own checkpoint
  std::optional<Checkpoint> checkpoint;   // resume or init.from_checkpoint
  std::optional<TrainState> saved;        // trainer state to continue (step, tokens, data, skip)
};

StartPoint FindStart(const TrainerOptions& opt, int64_t micro, RunLog& log) {
  const RunConfig& cfg = opt.config;
  StartPoint start;
  start.resume = FindLatestValid(opt.run_dir, /*warn=*/opt.rank == 0);
  bool restore_trainer_state = false;
  if (start.resume) {
    start.checkpoint = Checkpoint::Open(start.resume->dir, /*verify=*/false);
    Require(start.checkpoint->has_state() && start.checkpoint->has_optimizer(),
            "{}: a run checkpoint must hold state.json and the optimizer state", start.resume->dir);
    restore_trainer_state = true;
  } else if (!cfg.init.from_checkpoint.empty() && !IsHfModelDir(cfg.init.from_checkpoint)) {
    const CheckpointInfo info = ResolveCheckpoint(cfg.init.from_checkpoint);
    start.checkpoint = Checkpoint::Open(info.dir, /*verify=*/false);
    restore_trainer_state = !cfg.init.reset_step;
    Require(!restore_trainer_state || start.checkpoint->has_state(),
            "init.from_checkpoint: {} has no trainer state (state.json); set init.reset_step=true",
            info.dir);
    Require(!cfg.init.load_optimizer || start.checkpoint->has_optimizer(),
            "init.from_checkpoint: {} has no optimizer state (optim.safetensors); set "
            "init.load_optimizer=false to start Adam from zero",
            info.dir);
  }
  if (!restore_trainer_state) return start;
  start.saved = TrainState::FromJson(start.checkpoint->state(),
                                     start.checkpoint->dir() + "/" + kStateFile);
  if (start.resume && start.saved->trajectory_hash != cfg.TrajectoryHash()) {
    Fail("{}: the checkpoint at step {} belongs to a run whose training math differs from this "
         "config in: {}. Use a new --run-dir, or restore those keys",
         opt.run_dir, start.saved->step, DescribeDifferences(opt.run_dir, cfg));
  }
  if (start.resume && start.saved->micro_batch_instances != micro)
    log.Line(fmt::format("note: micro-batch size changed from {} to {}: the continuation is the "
                         "same math but not bit-identical to an uninterrupted run",
                         start.saved->micro_batch_instances, micro));
  return start;
}

// Fills what this rank owns of the parameters (GradReducer::Owned) from `read`, which fills a
// whole layout-sized buffer: directly when the rank owns everything, else through a full-size
// temporary of which it keeps its range (a whole-checkpoint reader has no ranged read).
// Reads the whole parameters on the host with `read` and keeps the owned range, in the backend's
// memory (copied in when it is not the host's).
void ReadOwnedParams(const ParamLayout& layout, const OwnedParams& owned, const Backend& backend,
                     const std::function<void(FlatBuffer&)>& read) {
  if (owned.begin == 0 && owned.end == layout.total_floats() && backend.is_host()) {
    read(*owned.buffer);
    return;
  }
  FlatBuffer whole(layout.total_floats());
  read(whole);
  CopyFloatsFromHost(backend, owned.buffer->data(), whole.data() + owned.begin,
                     static_cast<int64_t>(owned.end - owned.begin));
}

void ConfigureFaults(const RunConfig& cfg) {
  fault::FaultSpec fspec;
  if (cfg.fault.kill_at_step > 0) fspec.kill_at_step = cfg.fault.kill_at_step;
  if (cfg.fault.kill_in_checkpoint > 0) fspec.kill_in_checkpoint = cfg.fault.kill_in_checkpoint;
  fspec.checkpoint_phase = cfg.fault.kill_in_checkpoint_phase == "before_done"
                               ? fault::CheckpointPhase::kBeforeDone
                               : fault::CheckpointPhase::kFiles;
  fault::Configure(fspec);
}

// What one step produced, for the metrics line, the progress line and the summary.
struct StepRecord {
  int64_t step = 0;
  StepOutcome outcome;
  double seconds = 0, tokens_per_s = 0, mfu = 0, mfu_nominal = 0;
};

// One run of Train(): the state the named steps share. Rank 0 alone writes the run directory (log,
// config, metrics, checkpoints); the other data-parallel ranks run the same steps silently.
class TrainingRun {
 public:
  // Checks the batch shape, opens the training data (a bad file list fails before anything is
  // written), then the run directory and its log.
  explicit TrainingRun(const TrainerOptions& options);
  // Resume, init.from_checkpoint or a fresh init (saying which); writes the run's config.
  void LoadOrInitState();
  Recompute ChooseRecompute();
  int64_t RanksOnHost() const;
  bool done() const { return step_ >= cfg_.train.max_steps; }
  TrainSummary NothingToDo();
  // Metrics file, checkpoint writer, fault injection, the MFU denominator and the train step.
  void OpenOutputs();
  // Reads the next batch and runs one optimizer step on it.
  StepRecord TrainOneStep();
  void Log(const StepRecord& r);  // metrics line, skip note, progress line
  // Exit 2 (before this step's eval and checkpoint) after too many non-finite steps in a row.
  void StopIfDiverged() { non_finite_.StopIfDiverged(); }
  void MaybeEvaluate(int64_t s);
  void MaybeCheckpoint(int64_t s);
  // Collective: the signal (core/interrupt.h) that stops the run after step s, agreed by every
  // rank (the largest number caught on any rank), or 0 to go on.
  int AgreedInterrupt();
  // Writes step s's checkpoint unless MaybeCheckpoint just did, and records the signal.
  void CheckpointForInterrupt(int64_t s, int signal);
  TrainSummary Finish();  // waits for the last checkpoint, prints the summary

 private:
  data::RankBatch NextBatch(int64_t s);
  void SaveCheckpoint(int64_t s);
  bool last(int64_t s) const { return s == cfg_.train.max_steps; }

  const TrainerOptions& opt_;
  const RunConfig& cfg_;
  const Clock::time_point wall_start_ = Clock::now();
  const BatchShape shape_;
  const bool writer_;  // rank 0
  std::optional<RunDirLock> run_lock_;  // rank 0 holds the run directory from its first write
  std::unique_ptr<data::DataLoader> loader_;
  std::unique_ptr<RunLog> log_;
  TrainSummary summary_;
  StartPoint start_;

  ComputeSettings compute_;  // compute.precision and compute.isa, applied to the process
  std::string precision_name_, isa_name_;
  std::optional<Olmo3Model> model_;
  LocalGradReducer local_reducer_;
  GradReducer& reducer_;  // opt.reducer, or local_reducer_ for one process
  SingleProcessGroup local_group_;
  CheckpointGroup& group_;  // opt.checkpoint_group, or local_group_ for one process
  std::unique_ptr<Optimizer> optimizer_;
  SkipStepRule skip_;
  NonFiniteGuard non_finite_;
  const Backend* backend_ = nullptr;  // selected by compute.device and compute.precision
  int64_t step_ = 0, tokens_ = 0;
  int64_t saved_step_ = -1;  // the step of the last checkpoint this run started writing

  std::optional<MetricsWriter> metrics_;
  std::optional<ShardedCheckpointWriter> checkpoints_;  // on every rank
  std::optional<TrainStep> train_step_;
  double flops_per_token_ = 0, peak_ = 0, nominal_peak_ = 0;

  double sum_tps_ = 0, sum_mfu_ = 0, sum_mfu_nominal_ = 0, sum_step_s_ = 0;
  int64_t steps_run_ = 0;
  Clock::time_point loop_start_;
  ProfileTotals step_profile_;  // time by kind inside the timed steps (evals and saves excluded)
};

TrainingRun::TrainingRun(const TrainerOptions& options)
    : opt_(options),
      cfg_(options.config),
      shape_(CheckBatchShape(options)),
      writer_(options.rank == 0),
      local_reducer_(options.config.train.grad_accumulation),
      reducer_(options.reducer != nullptr ? *options.reducer : local_reducer_),
      group_(options.checkpoint_group != nullptr ? *options.checkpoint_group : local_group_),
      skip_(options.config.train.skip_step) {
  SetNumThreads(static_cast<int>(cfg_.train.threads));
  const Precision precision =
      ParsePrecision(cfg_.compute.precision, "config key 'compute.precision'");
  backend_ = &SelectBackend(cfg_.compute.device, precision);
  ComputeRequest request;
  request.precision = precision;
  request.isa = cfg_.compute.isa;
  request.isa_what = "config key 'compute.isa'";
  request.torch_cpu = cfg_.compute.torch_cpu;
  request.torch_cpu_what = "config key 'compute.torch_cpu'";
  compute_ = backend_->device().Configure(request);
  precision_name_ = PrecisionName(compute_.precision);
  isa_name_ = compute_.isa;
  if (const std::string no = ContextParallelRefusal(cfg_, opt_.world, RanksOnHost()); !no.empty())
    Fail("{}", no);
  const std::shared_ptr<const data::InstanceDataset> dataset = OpenTrainingData(cfg_);
  loader_ = std::make_unique<data::DataLoader>(dataset, LoaderOptionsFor(opt_));
  Require(loader_->batches_per_epoch() > 0,
          "data: {} instances of {} tokens in {}, fewer than one global batch of {}",
          dataset->num_instances(), shape_.seq_len, DescribeTrainingData(cfg_),
          shape_.global_instances);

  fs::create_directories(opt_.run_dir);
  if (writer_) run_lock_.emplace(RunDirLock::Acquire(opt_.run_dir));
  log_ = std::make_unique<RunLog>((fs::path(opt_.run_dir) / "train.log").string(), writer_);
  summary_.run_dir = opt_.run_dir;
}

void TrainingRun::LoadOrInitState() {
  start_ = FindStart(opt_, shape_.micro, *log_);
  if (start_.resume) summary_.resumed_from = start_.resume->dir;
  if (writer_) WriteRunConfig(opt_.run_dir, cfg_);

  const Backend& backend = *backend_;
  model_.emplace(cfg_.model, shape_.micro, shape_.seq_len, backend,
                 reducer_.MakeParamStore(cfg_.model, backend), ChooseRecompute());
  const ParamLayout& layout = model_->layout();
  const OwnedParams owned = reducer_.Owned(*model_);
  optimizer_ =
      reducer_.MakeOptimizer(layout, MakeUpdateRule(layout, cfg_.optim), model_->backend());
  const std::optional<Checkpoint>& ckpt = start_.checkpoint;
  if (ckpt) {
    // Each rank reads what it owns, from the shards that overlap it (any world size wrote them):
    // the parameters it holds (all of them, or its ZeRO-3 range) and its range of m and v.
    // Files are read on the host; FillFloatsFromHost copies them in when the backend's memory is
    // not the host's.
    const auto read = [&](ShardField field, size_t begin, size_t end, float* dst) {
      FillFloatsFromHost(backend, dst, end - begin,
                         [&](float* host) { ckpt->ReadRange(field, layout, begin, end, host); });
    };
    read(ShardField::kParams, owned.begin, owned.end, owned.buffer->data());
    if (start_.resume || cfg_.init.load_optimizer) {
      const OwnedState state = optimizer_->Owned();
      read(ShardField::kAdamM, state.begin, state.end, state.m);
      read(ShardField::kAdamV, state.begin, state.end, state.v);
      optimizer_->SetStep(ckpt->adam_step());
    }
  } else if (!cfg_.init.from_checkpoint.empty()) {
    ReadOwnedParams(layout, owned, backend, [&](FlatBuffer& p) {
      LoadHfWeights(cfg_.init.from_checkpoint, layout, p);
    });
    Require(!cfg_.init.load_optimizer,
            "init.from_checkpoint: {} is a Hugging Face model directory without optimizer state; "
            "set init.load_optimizer=false",
            cfg_.init.from_checkpoint);
  } else {
    // Element by element from (seed, tensor, index): a rank computes only what it owns.
    FillFloatsFromHost(backend, owned.buffer->data(), owned.end - owned.begin, [&](float* host) {
      InitParamsRange(layout, host, owned.begin, owned.end,
                      {.seed = cfg_.init.seed, .std = cfg_.model.initializer_range});
    });
  }
  if (const std::optional<TrainState>& saved = start_.saved) {
    step_ = saved->step;
    tokens_ = saved->tokens;
    loader_->Restore(data::LoaderState::FromJson(saved->loader));
    skip_.Restore(saved->skip_losses, saved->skip_grad_norms);
    non_finite_.Restore(saved->non_finite_total, saved->non_finite_consecutive,
                        saved->non_finite_first_step);
    Require(saved->adam_step == optimizer_->step(),
            "{}: state.json says Adam step {}, the optimizer state says {}", ckpt->dir(),
            saved->adam_step, optimizer_->step());
  }
  summary_.start_step = summary_.end_step = step_;

  if (start_.resume) {
    log_->Line(fmt::format("resuming from {} (step {}, {} tokens)", start_.resume->dir, step_,
                           tokens_));
  } else if (ckpt) {
    log_->Line(fmt::format("starting from {} ({}): weights{}{}", ckpt->dir(),
                           start_.saved ? "continuing its step counter" : "fresh step counter",
                           cfg_.init.load_optimizer ? ", Adam state" : "",
                           start_.saved ? ", data position" : ""));
  } else if (!cfg_.init.from_checkpoint.empty()) {
    log_->Line(fmt::format("starting from the weights of {}", cfg_.init.from_checkpoint));
  } else {
    log_->Line(fmt::format("fresh start: {} parameters, init seed {}", cfg_.model.NumParams(),
                           cfg_.init.seed));
  }
}

TrainSummary TrainingRun::NothingToDo() {
  log_->Line(fmt::format("nothing to do: the run is at step {} and train.max_steps is {}", step_,
                         cfg_.train.max_steps));
  return summary_;
}

void TrainingRun::OpenOutputs() {
  if (writer_)
    metrics_.emplace(opt_.run_dir,
                     start_.resume ? std::optional<int64_t>(step_) : std::nullopt);
  if (metrics_ && !metrics_->moved_aside().empty())
    log_->Line(fmt::format("fresh start: the earlier {} moved to {}", metrics_->path(),
                           metrics_->moved_aside()));
  checkpoints_.emplace(CheckpointWriterOptions{.run_dir = opt_.run_dir,
                                               .keep = static_cast<int>(cfg_.checkpoint.keep),
                                               .background = true},
                       group_, model_->backend());
  const OwnedState owned = optimizer_->Owned();
  checkpoints_->Reserve(owned.end - owned.begin);  // first-touch the snapshot now, not mid-run
  ConfigureFaults(cfg_);

  flops_per_token_ = cfg_.model.FlopsPerToken(shape_.seq_len);
  peak_ = opt_.peak_flops;
  std::string peak_text = fmt::format("{:.1f} GFLOP/s (given)", peak_ / 1e9);
  if (peak_ <= 0) {
    const PeakRate measured = backend_->device().MeasurePeak(compute_.precision, 1024);
    peak_ = measured.flops_per_s;
    peak_text = measured.text;
  }
  summary_.peak_flops = peak_;
  // MFU nominal: against the device's FLOP/cycle/core x clock x threads (ops/device.h), the
  // figure `replica bench` reports beside MFU.
  const NominalRate nominal =
      backend_->device().MeasureNominalPeak(compute_.precision, NumThreads());
  nominal_peak_ = nominal.flops_per_s;
  summary_.nominal_peak_flops = nominal_peak_;
  summary_.core_clock = nominal.clock_text;
  log_->Line(fmt::format("nominal peak {:.1f} GFLOP/s ({:g} FLOP/cycle/core x {:.2f} GHz x {}); "
                         "core clock {}",
                         nominal_peak_ / 1e9, nominal.flops_per_cycle_per_core,
                         nominal.clock_hz / 1e9, nominal.cores, summary_.core_clock));
  for (const std::string& line :
       ResolvedConfigLines(cfg_, loader_->dataset(), loader_->batches_per_epoch()))
    log_->Line(line);
  log_->Line(fmt::format("compute: {}", compute_.Describe()));
  for (const std::string& line : opt_.unreproduced) log_->Line("source config: " + line);
  if (const std::string note = cfg_.model.ContextBeyondRope(cfg_.data.seq_len); !note.empty())
    log_->Line("warning: data.seq_len: " + note);
  const std::optional<TrainState>& saved = start_.saved;
  // An unknown ISA or torch kind ("": a checkpoint older than the field) is no switch by itself.
  const auto moved = [](const std::string& was, const std::string& now) {
    return !was.empty() && !now.empty() && was != now;
  };
  if (saved && (saved->precision != precision_name_ || moved(saved->isa, isa_name_) ||
                moved(saved->torch_cpu, compute_.torch_cpu) || saved->world_size != opt_.world)) {
    // The device switch: same trajectory, other numerics or hardware from here on.
    nlohmann::json from = {{"precision", saved->precision}, {"isa", saved->isa},
                           {"world_size", saved->world_size}};
    nlohmann::json to = {{"precision", precision_name_}, {"isa", isa_name_},
                         {"world_size", opt_.world}};
    if (!saved->torch_cpu.empty() || !compute_.torch_cpu.empty()) {
      from["torch_cpu"] = saved->torch_cpu;
      to["torch_cpu"] = compute_.torch_cpu;
    }
    log_->Line(fmt::format("compute switch at step {}: {} -> {}", step_, from.dump(), to.dump()));
    if (saved->world_size != opt_.world && cfg_.train.micro_batch_layout == "contiguous")
      log_->Line(fmt::format(
          "warning: train.micro_batch_layout contiguous: {} -> {} ranks; with this layout a "
          "step's sums depend on the number of ranks (as OLMo-core's do), so the steps from here "
          "are not bit for bit those a {}-rank run takes (`strided` keeps them the same on any "
          "number of ranks)",
          saved->world_size, opt_.world, saved->world_size));
    // Recorded with the first step run after the switch: a resume from this same checkpoint
    // drops it with that step's other lines, so it is never written twice.
    if (metrics_)
      metrics_->Write({{"step", step_ + 1}, {"compute_switch", {{"from", from}, {"to", to}}}});
  }
  log_->Line(fmt::format(
      "training {} -> {}: {} params, {} x {} tokens per step ({} of {}{}), {}, {:.2f} "
      "GFLOP/token, GEMM peak {}",
      step_, cfg_.train.max_steps, cfg_.model.NumParams(), shape_.global_instances,
      shape_.seq_len, Plural(shape_.local_micro, "micro-batch", "micro-batches"), shape_.micro,
      opt_.world > 1 ? fmt::format(" on each of {} ranks", opt_.world) : std::string(),
      Plural(NumThreads(), "thread"), flops_per_token_ / 1e9, peak_text));

  train_step_.emplace(*model_, reducer_, *optimizer_, skip_, shape_.micro,
                      cfg_.train.z_loss_multiplier, cfg_.train.micro_batch_layout == "contiguous");
  loop_start_ = Clock::now();
}

// The ranks sharing this machine's memory: mpirun's local size, else all (ranks as threads or
// forked processes).
int64_t TrainingRun::RanksOnHost() const {
  if (const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    return std::max<int64_t>(1, std::atoll(local));
  return opt_.world;
}

// train.recompute, with auto resolved against the memory budget per rank (run/plan.h).
Recompute TrainingRun::ChooseRecompute() {
  if (cfg_.train.recompute != "auto")
    return ParseRecompute(cfg_.train.recompute, "config key 'train.recompute'");
  std::string source;
  const uint64_t budget = MemoryBudget(cfg_, std::nullopt, RanksOnHost(), &source);
  bool fits = false;
  const Recompute policy = ResolveRecompute(cfg_, opt_.world, budget, &fits);
  log_->Line(fmt::format("recompute: {} (auto: planned {} per rank {} the budget of {}, {})",
                         RecomputeName(policy),
                         FormatBytes(PlanMemory(cfg_, opt_.world, policy).total()),
                         fits ? "fits" : "does NOT fit", FormatBytes(budget), source));
  return policy;
}

data::RankBatch TrainingRun::NextBatch(int64_t s) {
  const data::RankBatch batch = [&] {
    ProfileScope scope(ProfileCategory::kData);
    return loader_->Next();
  }();
  if (opt_.on_batch) {  // leak guard, --dump-batches
    ProfileScope scope(ProfileCategory::kLeakGuard);
    opt_.on_batch(s, batch.instances, batch.input_ids.data(),
                  static_cast<int64_t>(batch.instances.size()), shape_.seq_len, batch.cu_doc_lens);
  }
  return batch;
}

StepRecord TrainingRun::TrainOneStep() {
  StepRecord r;
  r.step = step_ + 1;
  const auto t0 = Clock::now();
  const ProfileTotals p0 = ProfileSnapshot();
  const data::RankBatch batch = NextBatch(r.step);

  const double lr = LrAt(cfg_.optim.schedule, cfg_.optim.lr, r.step);
  {
    // The weights change only through the optimizer inside the step (Backend::BeginStep: the
    // bf16 backends convert each matmul weight once per step).
    const auto bracket = backend_->BeginStep();
    r.outcome = RunRankBatch(*train_step_, batch, lr, shape_.local_instances);
  }
  const int64_t step_tokens = shape_.global_instances * shape_.seq_len;
  step_ = r.step;
  tokens_ += step_tokens;
  r.seconds = SecondsSince(t0);
  if (steps_run_ > 0) {  // the first step (one-time allocations, cold caches) is left out
    const ProfileTotals p1 = ProfileSnapshot();
    for (size_t k = 0; k < p1.seconds.size(); ++k)
      step_profile_.seconds[k] += p1.seconds[k] - p0.seconds[k];
    sum_step_s_ += r.seconds;
  }
  r.tokens_per_s = static_cast<double>(step_tokens) / r.seconds;
  // Packed rows attend within each document: the attention term counts the keys this rank's
  // tokens see there (the other ranks' batches are taken to be alike).
  const double flops_per_token =
      batch.cu_doc_lens.empty()
          ? flops_per_token_
          : cfg_.model.FlopsPerTokenOfDocuments(batch.cu_doc_lens.data(),
                                                static_cast<int64_t>(batch.cu_doc_lens.size()));
  // R ranks run on R times the hardware whose GEMM rate `peak` is (one process's).
  r.mfu = flops_per_token * r.tokens_per_s / (peak_ * static_cast<double>(opt_.world));
  r.mfu_nominal =
      flops_per_token * r.tokens_per_s / (nominal_peak_ * static_cast<double>(opt_.world));
  ++steps_run_;
  sum_tps_ += r.tokens_per_s;
  sum_mfu_ += r.mfu;
  sum_mfu_nominal_ += r.mfu_nominal;
  if (r.outcome.skipped) ++summary_.skipped_steps;
  if (steps_run_ == 1) summary_.first_loss = r.outcome.loss;
  summary_.last_loss = r.outcome.loss;
  summary_.end_step = r.step;
  return r;
}

void TrainingRun::Log(const StepRecord& r) {
  const int64_t s = r.step;
  const StepOutcome& o = r.outcome;
  if (metrics_) metrics_->Write(EncodeNonFinite({{"step", s},
                                                 {"loss", o.loss},
                                                 {"ce_loss", o.ce_loss},
                                                 {"z_loss", o.z_loss},
                                                 {"grad_norm", o.grad_norm},
                                                 {"clip_coef", o.clip_coef},
                                                 {"lr", o.lr},
                                                 {"tokens", tokens_},
                                                 {"step_time_s", r.seconds},
                                                 {"tokens_per_s", r.tokens_per_s},
                                                 {"tokens_per_s_per_rank",
                                                  r.tokens_per_s / static_cast<double>(opt_.world)},
                                                 {"mfu", r.mfu},
                                                 {"mfu_nominal", r.mfu_nominal},
                                                 {"skipped", o.skipped},
                                                 {"non_finite", o.non_finite},
                                                 {"precision", precision_name_},
                                                 {"isa", isa_name_}}));
  non_finite_.Observe(s, o.loss, o.grad_norm);
  if (o.non_finite)
    log_->Line(fmt::format("step {}: non-finite loss {} or grad norm {}: update not applied ({} in "
                           "a row; the run stops at {})",
                           s, o.loss, o.grad_norm, non_finite_.consecutive(),
                           NonFiniteGuard::kMaxConsecutive));
  else if (o.skipped)
    log_->Line(fmt::format("step {}: skipped the update (loss {:.4f}, grad norm {:.4f} beyond "
                           "{} sigma of the last {} steps)",
                           s, o.loss, o.grad_norm, cfg_.train.skip_step.sigma,
                           cfg_.train.skip_step.window));
  // A terminal gets the line redrawn every step; logs get it every log_interval steps.
  const bool at_interval = s % cfg_.train.log_interval == 0 || last(s) || steps_run_ == 1;
  if (opt_.progress && (at_interval || log_->tty())) {
    const double elapsed = SecondsSince(loop_start_);
    const double eta = elapsed / static_cast<double>(steps_run_) *
                       static_cast<double>(cfg_.train.max_steps - s);
    log_->Progress(fmt::format("step {}/{} | loss {:.4f} | grad norm {:.3f} | lr {:.3g} | {:.0f} "
                               "tok/s | MFU {:.1f}% | ETA {}",
                               s, cfg_.train.max_steps, o.loss, o.grad_norm, o.lr, r.tokens_per_s,
                               100 * r.mfu, Duration(eta)),
                   /*to_file=*/at_interval);
  }
}

void TrainingRun::MaybeEvaluate(int64_t s) {
  // Rank 0 evaluates and the others wait for it, unless the forward is collective (sharded
  // weights): then every rank runs it and rank 0 records it.
  const bool due = opt_.eval && (writer_ || reducer_.CollectiveForward()) &&
                   ((cfg_.eval.interval > 0 && s % cfg_.eval.interval == 0) || last(s));
  if (!due) return;
  const auto e0 = Clock::now();
  ProfileScope scope(ProfileCategory::kEval);
  nlohmann::json result = opt_.eval(s, *model_);
  if (writer_ && result.is_object() && !result.empty()) {
    metrics_->Write(EncodeNonFinite({{"step", s}, {"eval", result}}));
    log_->Line(fmt::format("step {}: eval ({:.1f}s) {}", s, SecondsSince(e0),
                           result.dump()));
  }
}

void TrainingRun::MaybeCheckpoint(int64_t s) {
  ProfileScope scope(ProfileCategory::kCheckpoint);
  if ((cfg_.checkpoint.interval > 0 && s % cfg_.checkpoint.interval == 0) || last(s))
    SaveCheckpoint(s);
  else
    checkpoints_->Poll();  // completes a write in flight once every rank's files are written
}

int TrainingRun::AgreedInterrupt() {
  const int mine = InterruptSignal();
  if (group_.AllTrue(mine == 0)) return 0;
  // The largest signal number on any rank, one bit at a time from the top (numbers < 64).
  int agreed = 0;
  for (int bit = 5; bit >= 0; --bit) {
    const int candidate = agreed | (1 << bit);
    if (!group_.AllTrue(mine < candidate)) agreed = candidate;
  }
  return agreed;
}

void TrainingRun::CheckpointForInterrupt(int64_t s, int signal) {
  if (saved_step_ != s) SaveCheckpoint(s);
  summary_.interrupted_signal = signal;
}

void TrainingRun::SaveCheckpoint(int64_t s) {
  saved_step_ = s;
  TrainState st;
  st.step = s;
  st.tokens = tokens_;
  st.loader = loader_->state().ToJson();
  st.skip_losses.assign(skip_.losses().begin(), skip_.losses().end());
  st.skip_grad_norms.assign(skip_.grad_norms().begin(), skip_.grad_norms().end());
  st.init_seed = cfg_.init.seed;
  st.config_hash = cfg_.Hash();
  st.trajectory_hash = cfg_.TrajectoryHash();
  st.world_size = opt_.world;
  st.micro_batch_instances = shape_.micro;
  st.precision = precision_name_;
  st.isa = isa_name_;
  st.torch_cpu = compute_.torch_cpu;
  st.non_finite_total = non_finite_.total();
  st.non_finite_consecutive = non_finite_.consecutive();
  st.non_finite_first_step = non_finite_.first_step();
  st.adam_step = optimizer_->step();
  // Every rank writes the range it owns: its Adam m and v, and the parameters of the range (the
  // optimizer's master copy when it holds one, else this rank's full buffer).
  const OwnedState owned = optimizer_->Owned();
  // The parameters of that range from what this rank holds (all of them, or its ZeRO-3 range).
  const OwnedParams held = reducer_.Owned(*model_);
  Require(owned.begin >= held.begin && owned.end <= held.end,
          "trainer: the optimizer owns [{}, {}) but this rank holds parameters [{}, {})",
          owned.begin, owned.end, held.begin, held.end);
  const float* params = held.buffer->data() + (owned.begin - held.begin);
  checkpoints_->Save(s, model_->layout(), {owned.begin, owned.end, params, owned.m, owned.v},
                     optimizer_->step(), writer_ ? st.ToJson() : nlohmann::json(),
                     writer_ ? cfg_.model.ToHfJson() : nlohmann::json());
  if (writer_) summary_.last_checkpoint = checkpoints_->DirOf(s);
}

TrainSummary TrainingRun::Finish() {
  if (checkpoints_) checkpoints_->Finish();
  log_->EndProgress();

  TrainSummary& summary = summary_;
  summary.wall_s = SecondsSince(wall_start_);
  summary.mean_tokens_per_s = steps_run_ ? sum_tps_ / static_cast<double>(steps_run_) : 0;
  summary.mean_mfu = steps_run_ ? sum_mfu_ / static_cast<double>(steps_run_) : 0;
  summary.mean_mfu_nominal = steps_run_ ? sum_mfu_nominal_ / static_cast<double>(steps_run_) : 0;
  summary.non_finite_steps = non_finite_.total();
  log_->Line(fmt::format(
      "done: steps {} -> {} in {}, loss {:.4f} -> {:.4f}, {:.0f} tok/s, MFU {:.1f}% (of {:.1f} "
      "GFLOP/s GEMM peak; nominal {:.1f}% of {:.1f}), {} skipped, {} non-finite in the run; "
      "metrics {}, last checkpoint {}",
      summary.start_step, summary.end_step, Duration(summary.wall_s), summary.first_loss,
      summary.last_loss, summary.mean_tokens_per_s, 100 * summary.mean_mfu, peak_ / 1e9,
      100 * summary.mean_mfu_nominal, nominal_peak_ / 1e9,
      summary.skipped_steps, summary.non_finite_steps,
      metrics_ ? metrics_->path() : std::string("(rank 0)"),
      summary.last_checkpoint));
  if (steps_run_ > 1) {
    summary.step_profile = {{"steps", steps_run_ - 1}, {"step_seconds", sum_step_s_}};
    for (int k = 0; k < static_cast<int>(ProfileCategory::kCount); ++k) {
      const auto c = static_cast<ProfileCategory>(k);
      if (step_profile_.Get(c) > 0)
        summary.step_profile[ProfileCategoryName(c)] = step_profile_.Get(c);
    }
    log_->Line(fmt::format("time by kind inside training steps {}..{} (this process; the first "
                           "step is left out):\n{}",
                           summary.start_step + 2, summary.end_step,
                           ProfileTable(step_profile_, sum_step_s_)));
  }
  if (summary_.interrupted_signal != 0)
    log_->Line(fmt::format("interrupted at step {} ({}): checkpoint written, rerun to resume",
                           summary_.end_step, SignalName(summary_.interrupted_signal)));
  return summary;
}

}  // namespace

nlohmann::json TrainSummary::ToJson() const {
  return {{"run_dir", run_dir},
          {"start_step", start_step},
          {"end_step", end_step},
          {"resumed_from", resumed_from},
          {"skipped_steps", skipped_steps},
          {"non_finite_steps", non_finite_steps},
          {"first_loss", first_loss},
          {"last_loss", last_loss},
          {"wall_s", wall_s},
          {"mean_tokens_per_s", mean_tokens_per_s},
          {"mean_mfu", mean_mfu},
          {"peak_flops", peak_flops},
          {"mean_mfu_nominal", mean_mfu_nominal},
          {"nominal_peak_flops", nominal_peak_flops},
          {"core_clock", core_clock},
          {"last_checkpoint", last_checkpoint},
          {"interrupted_signal", interrupted_signal},
          {"step_profile", step_profile}};
}


TrainSummary Train(const TrainerOptions& options) {
  TrainingRun run(options);  // batch shape, training data, run directory and its log
  run.LoadOrInitState();     // resume, init.from_checkpoint or fresh; weights, Adam, data position
  if (run.done()) return run.NothingToDo();
  run.OpenOutputs();         // metrics, checkpoint writer, fault injection, GEMM peak
  while (!run.done()) {
    const StepRecord r = run.TrainOneStep();  // next batch, forward/backward, optimizer step
    run.Log(r);
    run.StopIfDiverged();  // too many non-finite steps in a row: exit 2, nothing written
    run.MaybeEvaluate(r.step);
    fault::MaybeKill(fault::FaultPoint::kStep, r.step);
    run.MaybeCheckpoint(r.step);
    // Every rank looks at the same step boundary, so all of them write the same step.
    if (!run.done()) {
      if (const int signal = run.AgreedInterrupt(); signal != 0) {
        run.CheckpointForInterrupt(r.step, signal);
        break;
      }
    }
  }
  return run.Finish();
}

}  // namespace replica
