// replica compare RUN_A RUN_B [--tolerance T] [--metrics LIST] [--json]: exit 0 iff the runs'
// shared deterministic metrics agree within T at every shared step (train/compare.h).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "train/compare.h"
#include "train/metrics_reader.h"

namespace {

struct CompareArgs {
  std::string run_a, run_b;
  double tolerance = 0;
  std::vector<std::string> metrics;
  bool json = false, allow_missing = false, per_step = false;
};

replica::cli::CommandRegistration reg(
    "compare", "compare two runs' metrics step by step (exit 0 iff equal within tolerance)",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<CompareArgs>();
      app.add_option("RUN_A", args->run_a, "run directory (or metrics.jsonl)")->required();
      app.add_option("RUN_B", args->run_b, "run directory (or metrics.jsonl)")->required();
      app.add_option("--tolerance", args->tolerance,
                     "largest accepted |a - b| (default 0: bit-identical)")
          ->check(CLI::NonNegativeNumber);
      app.add_option("--metrics", args->metrics,
                     "compare only these metrics (comma-separated; 'eval.*' prefixes; timings "
                     "such as step_time_s are compared only when listed)")
          ->delimiter(',');
      app.add_flag("--allow-missing-steps", args->allow_missing,
                   "do not fail when one run has steps the other lacks");
      app.add_flag("--per-step", args->per_step, "list every shared step, not only differing ones");
      app.add_flag("--json", args->json, "print the report as JSON on stdout");
      return [args] {
        replica::MetricsLog a = replica::ReadMetrics(args->run_a);
        replica::MetricsLog b = replica::ReadMetrics(args->run_b);
        replica::CompareOptions options;
        options.tolerance = args->tolerance;
        options.metrics = args->metrics;
        options.allow_missing_steps = args->allow_missing;
        options.per_step_all = args->per_step;
        replica::CompareReport report = replica::CompareRuns(a, b, options);
        if (args->json) {
          std::printf("%s\n", report.ToJson().dump(2).c_str());
        } else {
          std::fputs(report.ToText().c_str(), stdout);
        }
        return report.pass ? 0 : 1;
      };
    });

}  // namespace
