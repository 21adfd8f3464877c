// replica plan CONFIG.yaml|config.json [--set k=v ...] [--world R] [--memory 24GiB]
// [--lr-at S1,S2,...] [--json] [--allow-unsupported] [--mix-dir ...]: what a run config means
// (run/plan.h): parameters, FLOPs per token, memory per rank for its sharding mode and recompute
// policy against a budget, the smallest world size that fits, steps, tokens, LR.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/set_option.h"
#include "core/byte_size.h"
#include "core/error.h"
#include "cli/olmo_core_options.h"
#include "run/olmo_core_config.h"
#include "run/context_parallel.h"
#include "run/plan.h"
#include "run/run_config.h"

namespace {

struct PlanArgs {
  std::string config;
  std::vector<std::string> sets;
  int64_t world = 1;
  std::string memory;
  std::vector<int64_t> lr_at;
  bool json = false;
  replica::OlmoCoreImportOptions import;
};

replica::cli::CommandRegistration reg(
    "plan", "what a run config means: parameters, FLOPs/token, memory per rank (fits?), steps, LR",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<PlanArgs>();
      app.add_option("CONFIG", args->config, "run config (YAML, or an OLMo-core config.json)")
          ->required();
      replica::cli::AddOlmoCoreOptions(app, args->import);
      app.add_flag("--allow-unsupported", args->import.allow_unsupported,
                   "OLMo-core config.json: plan what replica can, warn about the settings it "
                   "cannot reproduce (train refuses them)");
      replica::cli::AddSetOption(app, args->sets, "override a config key: key=value (repeatable)");
      app.add_option("--world", args->world, "data-parallel ranks (default 1)");
      app.add_option("--memory", args->memory,
                     "memory per rank, e.g. 24GiB (default: parallel.memory_per_rank, else "
                     "physical memory / world)");
      app.add_option("--lr-at", args->lr_at, "steps to print the learning rate at (S1,S2,...)")
          ->delimiter(',');
      app.add_flag("--json", args->json, "print JSON on stdout");
      return [args] {
        const replica::RunConfig config =
            replica::LoadRunConfig(args->config, args->sets, args->import);
        std::vector<int64_t> steps = args->lr_at;
        if (steps.empty()) {
          steps = {1, config.optim.schedule.warmup, config.train.max_steps};
          if (config.optim.schedule.t_max > 0) steps.push_back(config.optim.schedule.t_max);
        }
        replica::PlanOptions options;
        options.world = args->world;
        if (!args->memory.empty()) {
          options.memory = replica::ParseByteSize(args->memory, "--memory");
          replica::Require(*options.memory > 0,
                           "--memory {}: must be more than 0 bytes (leave it out for this "
                           "machine's memory)", args->memory);
        }
        options.lr_steps = steps;
        if (const std::string note = config.model.ContextBeyondRope(config.data.seq_len);
            !note.empty())
          std::fprintf(stderr, "replica: warning: %s: data.seq_len: %s\n", args->config.c_str(),
                       note.c_str());
        const replica::RunPlan plan = replica::MakePlan(config, options);
        const std::optional<replica::ContextParallelPlan> cp =
            replica::PlanContextParallel(config, options.memory);
        if (args->json) {
          nlohmann::json j = plan.ToJson();
          if (cp) j["context_parallel"] = cp->ToJson();
          std::printf("%s\n", j.dump(2).c_str());
        } else {
          std::fputs(plan.ToText().c_str(), stdout);
          if (cp) std::printf("%s\n", cp->ToText().c_str());
        }
        return 0;
      };
    });

}  // namespace
