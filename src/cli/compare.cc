// replica compare RUN_A RUN_B [--tolerance T] [--metrics LIST] [--eval-gate] [--json]: exit 0 iff
// the runs' shared deterministic metrics agree within T at every shared step (run/compare.h)
// and, with --eval-gate, B's held-out metrics are not suspiciously better than A's
// (eval/eval_gate.h: A is the reference, B the candidate).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/validators.h"
#include "eval/eval_gate.h"
#include "run/compare.h"
#include "run/metrics_reader.h"

namespace {

struct CompareArgs {
  std::string run_a, run_b;
  double tolerance = 0;
  std::vector<std::string> metrics;
  bool json = false, allow_missing = false, per_step = false, eval_gate = false;
  double eval_gate_tolerance = 0;
};

replica::cli::CommandRegistration reg(
    "compare", "compare two runs' metrics step by step (exit 0 iff equal within tolerance)",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto args = std::make_shared<CompareArgs>();
      app.add_option("RUN_A", args->run_a, "run directory (or metrics.jsonl)")->required();
      app.add_option("RUN_B", args->run_b, "run directory (or metrics.jsonl)")->required();
      app.add_option("--tolerance", args->tolerance,
                     "largest accepted |a - b| (default 0: bit-identical)")
          ->check(replica::cli::NonNegative());
      app.add_option("--metrics", args->metrics,
                     "compare only these metrics (comma-separated; 'eval.*' prefixes; timings "
                     "such as step_time_s are compared only when listed)")
          ->delimiter(',');
      app.add_flag("--allow-missing-steps", args->allow_missing,
                   "do not fail when one run has steps the other lacks");
      app.add_flag("--per-step", args->per_step, "list every shared step, not only differing ones");
      app.add_flag("--eval-gate", args->eval_gate,
                   "also fail when B's held-out metrics beat A's (the reference) beyond "
                   "--eval-gate-tolerance, or B's canary alarm fired: possible contamination");
      app.add_option("--eval-gate-tolerance", args->eval_gate_tolerance,
                     "absolute tolerance of the eval gate, in each metric's units (default 0)")
          ->check(replica::cli::NonNegative());
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
        nlohmann::json gate_json;
        if (args->eval_gate) {
          const auto gate = replica::eval::CheckEvalGateFiles(
              a.path, b.path, {.tolerance = args->eval_gate_tolerance});
          gate_json = gate.ToJson(args->eval_gate_tolerance);
          report.checks.push_back(
              {"eval_gate", gate.pass(),
               fmt::format("{} held-out value(s) compared, {} better in B than in A beyond {}, "
                           "{} canary alarm(s) in B",
                           gate.compared, gate.suspicious.size(), args->eval_gate_tolerance,
                           gate.canary_alarm_steps.size())});
          report.pass = report.pass && gate.pass();
        }
        if (args->json) {
          nlohmann::json j = report.ToJson();
          if (!gate_json.is_null()) j["eval_gate"] = gate_json;
          std::printf("%s\n", j.dump(2).c_str());
        } else {
          std::fputs(report.ToText().c_str(), stdout);  // lists every check, the gate included
        }
        return report.pass ? 0 : 1;
      };
    });

}  // namespace
