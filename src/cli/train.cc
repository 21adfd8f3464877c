// replica train CONFIG.yaml [--set key=value ...] --run-dir DIR [--json]: trains per the config
// (train/trainer.h), resuming from the newest valid checkpoint in DIR. Evaluation sets named in
// eval.sets are scored through src/eval's EvalSuite every eval.interval steps and at the end;
// the leak guard (eval.leak_guard) refuses eval files among the training files and scans every
// emitted batch for eval items.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/set_option.h"
#include "cli/olmo_core_options.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "parallel/communicator.h"
#include "parallel/checkpoint_group.h"
#include "parallel/data_parallel.h"
#include "parallel/zero3.h"
#include "eval/decon.h"
#include "eval/eval_suite.h"
#include "eval/leak_guard.h"
#include "eval/model_loader.h"
#include "eval/text_encoder.h"
#include "run/olmo_core_config.h"
#include "run/run_config.h"
#include "train/batch_dump.h"
#include "train/trainer.h"

namespace {

struct TrainArgs {
  std::string config, run_dir, dump_batches;
  std::vector<std::string> sets;
  bool json = false, quiet = false;
  replica::OlmoCoreImportOptions import;
};

replica::cli::CommandRegistration reg(
    "train", "train per a YAML config; resumes from the newest valid checkpoint in --run-dir",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<TrainArgs>();
      app.add_option("CONFIG", args->config,
                     "run config (YAML, docs/config.md; or an OLMo-core config.json, "
                     "docs/olmo-core.md)")
          ->required();
      replica::cli::AddOlmoCoreOptions(app, args->import);
      replica::cli::AddSetOption(app, args->sets,
                                 "override a config key, e.g. --set train.max_steps=100 (repeatable)");
      app.add_option("--run-dir", args->run_dir,
                     "run directory: config.yaml, metrics.jsonl, checkpoints/, train.log")
          ->required();
      app.add_flag("--json", args->json, "print the end-of-run summary as JSON on stdout");
      app.add_flag("--quiet", args->quiet, "no progress lines (other messages still go to stderr)");
      app.add_flag("--allow-unsupported", args->import.allow_unsupported,
                   "OLMo-core config.json: train past a refused setting where replica computes "
                   "something in its place (named on stderr and in train.log); others stay refused");
      app.add_option("--dump-batches", args->dump_batches,
                     "write what each step fed to DIR/rank-<r>.jsonl: instance indices, the "
                     "sha256 of the input ids and, with document lengths, each row's doc_lens "
                     "(docs/training.md)");
      return [args] {
        // Data parallelism (docs/distributed.md): under mpirun every rank runs this with its rank
        // and rank 0 alone writes the run directory; started alone, a world-1 job without MPI.
        auto comm = replica::parallel::CommunicatorFromEnvironment();
        replica::parallel::RestrictFaultToRank(*comm);
        replica::TrainerOptions options;
        args->import.for_training = true;
        options.config = replica::LoadRunConfig(args->config, args->sets, args->import,
                                                &options.unreproduced);
        options.rank = comm->rank();
        options.world = comm->world();
        // parallel.sharding zero3 shards parameters, gradients and Adam at any world size
        // (world 1 included); zero1 with several ranks shards Adam (data_parallel.h).
        std::unique_ptr<replica::GradReducer> parallel;
        std::unique_ptr<replica::parallel::CommunicatorCheckpointGroup> checkpoint_group;
        if (options.config.parallel.sharding == "zero3") {
          parallel = std::make_unique<replica::parallel::Zero3>(*comm, options.config);
        } else if (comm->world() > 1) {
          parallel = std::make_unique<replica::parallel::DataParallel>(*comm, options.config);
        }
        if (comm->world() > 1) {
          checkpoint_group = std::make_unique<replica::parallel::CommunicatorCheckpointGroup>(*comm);
          options.checkpoint_group = checkpoint_group.get();
        }
        options.reducer = parallel.get();
        options.run_dir = args->run_dir;
        options.progress = !args->quiet;
        const replica::RunConfig& c = options.config;
        std::shared_ptr<replica::eval::TextEncoder> encoder;
        std::shared_ptr<replica::eval::EvalSuite> suite;
        std::shared_ptr<replica::eval::LeakGuard> guard;
        if (!c.eval.sets.empty() || !c.eval.canaries.empty()) {
          encoder = replica::eval::MakeTextEncoder(c.eval.tokenizer,
                                                   static_cast<int32_t>(c.model.eos_token_id),
                                                   static_cast<int32_t>(c.model.pad_token_id));
          replica::eval::EvalSuiteOptions eo;
          eo.seq_len = c.data.seq_len;
          eo.batch_size = c.train.micro_batch_instances;  // the model's preallocated batch
          eo.canary_path = c.eval.canaries;
          eo.canary_vocab = c.eval.tokenizer == "dolma2" ? 100256 : 256;  // text ids, no specials
          suite = std::make_shared<replica::eval::EvalSuite>(c.eval.sets, *encoder, eo);
          options.eval = [suite](int64_t, replica::Olmo3Model& model) {
            return suite->Run(replica::eval::ModelLossFn(model));
          };
          // Leak guard: no training file may be an eval file, and every batch the loader
          // emits is scanned for eval items.
          replica::eval::CheckTrainFilesDisjoint(replica::TrainingFiles(c),
                                                 suite->RegisteredFiles());
          const auto mode = replica::eval::ParseLeakGuardMode(c.eval.leak_guard);
          if (mode != replica::eval::LeakGuardMode::kOff) {
            std::vector<replica::eval::EvalSet> indexed = suite->sets();
            if (suite->canaries()) indexed.push_back(*suite->canaries());
            auto index = std::make_shared<const replica::eval::NgramIndex>(
                replica::eval::BuildDeconIndex(indexed, *encoder, {}));
            guard = std::make_shared<replica::eval::LeakGuard>(index, mode);
            options.on_batch = [guard](int64_t step, const std::vector<uint32_t>& instances,
                                       const int32_t* tokens, int64_t rows, int64_t seq_len,
                                       const std::vector<int32_t>&) {
              guard->Check(step, std::vector<int64_t>(instances.begin(), instances.end()), tokens,
                           rows, seq_len);
            };
          }
        }
        if (!args->dump_batches.empty()) {
          auto dump = std::make_shared<replica::BatchDump>(args->dump_batches, comm->rank(),
                                                           comm->world());
          options.on_batch = [dump, guard = options.on_batch](
                                 int64_t step, const std::vector<uint32_t>& instances,
                                 const int32_t* tokens, int64_t rows, int64_t seq_len,
                                 const std::vector<int32_t>& cu_doc_lens) {
            if (guard) guard(step, instances, tokens, rows, seq_len, cu_doc_lens);
            dump->Write(step, instances, tokens, rows, seq_len, cu_doc_lens);
          };
        }
        // SIGINT, SIGTERM, SIGHUP, SIGUSR1: finish the step, checkpoint it, exit 128 + signal.
        replica::InstallInterruptHandlers();
        const replica::TrainSummary summary = replica::Train(options);
        // A rerun of a finished run trains no step and scans nothing: no leak-guard line then.
        if (guard && guard->Stats()["batches"].get<long long>() > 0) {
          const nlohmann::json g = guard->Stats();
          std::fprintf(stderr, "leak guard (%s): %lld batches scanned, %lld leaks, %.3f ms per batch "
                       "(max %.3f ms)\n", g["mode"].get<std::string>().c_str(),
                       g["batches"].get<long long>(), g["leaks"].get<long long>(),
                       1e3 * g["seconds_per_batch_mean"].get<double>(),
                       1e3 * g["seconds_per_batch_max"].get<double>());
        }
        if (args->json && comm->rank() == 0) std::printf("%s\n", summary.ToJson().dump(2).c_str());
        return summary.interrupted_signal != 0 ? 128 + summary.interrupted_signal : 0;
      };
    });

}  // namespace
