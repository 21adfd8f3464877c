// replica train CONFIG.yaml [--set key=value ...] --run-dir DIR [--json]: trains per the config
// (train/trainer.h), resuming from the newest valid checkpoint in DIR. Evaluation sets named in
// eval.sets are scored through src/eval's EvalSuite every eval.interval steps and at the end.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "eval/eval_suite.h"
#include "eval/model_loader.h"
#include "eval/text_encoder.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace {

struct TrainArgs {
  std::string config, run_dir;
  std::vector<std::string> sets;
  bool json = false, quiet = false;
};

replica::cli::CommandRegistration reg(
    "train", "train per a YAML config; resumes from the newest valid checkpoint in --run-dir",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<TrainArgs>();
      app.add_option("CONFIG", args->config, "run config (YAML; see docs/config.md)")->required();
      app.add_option("--set", args->sets,
                     "override a config key, e.g. --set train.max_steps=100 (repeatable)");
      app.add_option("--run-dir", args->run_dir,
                     "run directory: config.yaml, metrics.jsonl, checkpoints/, train.log")
          ->required();
      app.add_flag("--json", args->json, "print the end-of-run summary as JSON on stdout");
      app.add_flag("--quiet", args->quiet, "no progress lines (other messages still go to stderr)");
      return [args] {
        replica::TrainerOptions options;
        options.config = replica::RunConfig::Load(args->config, args->sets);
        options.run_dir = args->run_dir;
        options.progress = !args->quiet;
        const replica::RunConfig& c = options.config;
        std::shared_ptr<replica::eval::TextEncoder> encoder;
        std::shared_ptr<replica::eval::EvalSuite> suite;
        if (!c.eval.sets.empty()) {
          encoder = replica::eval::MakeTextEncoder(c.eval.tokenizer,
                                                   static_cast<int32_t>(c.model.eos_token_id),
                                                   static_cast<int32_t>(c.model.pad_token_id));
          replica::eval::EvalSuiteOptions eo;
          eo.seq_len = c.data.seq_len;
          eo.batch_size = c.train.micro_batch_instances;  // the model's preallocated batch
          suite = std::make_shared<replica::eval::EvalSuite>(c.eval.sets, *encoder, eo);
          options.eval = [suite](int64_t, replica::Olmo3Model& model) {
            return suite->Run(replica::eval::ModelLossFn(model));
          };
        }
        const replica::TrainSummary summary = replica::Train(options);
        if (args->json) std::printf("%s\n", summary.ToJson().dump(2).c_str());
        return 0;
      };
    });

}  // namespace
