// `replica parity`: logits (and gradients) of replica's model against a reference dump
// (docs/design.md §5). Exit 0 when every threshold holds, 1 when one does not, 2 on bad input.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/compute_flags.h"
#include "core/threads.h"
#include "eval/parity.h"

namespace {

struct ParityArgs {
  replica::ParityOptions options;
  bool json = false;
  int threads = 0;
  replica::cli::ComputeFlags compute;
};

replica::cli::CommandRegistration reg(
    "parity", "compare the model's logits/gradients with a reference dump (KL, top-1, grads)",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto a = std::make_shared<ParityArgs>();
      app.add_option("--model", a->options.model_dir, "model directory (config.json + weights)")
          ->required();
      app.add_option("--reference", a->options.reference_path,
                     "reference dump (.safetensors: input_ids, logits, [labels, loss, grad.*])")
          ->required();
      app.add_flag("--grads", a->options.grads, "also compare every parameter gradient");
      app.add_option("--max-kl", a->options.max_kl,
                     "largest allowed per-position KL(P_ref || P_model)")
          ->capture_default_str();
      app.add_option("--min-top1", a->options.min_top1,
                     "smallest allowed fraction of positions with the same argmax")
          ->capture_default_str();
      app.add_option("--max-grad-rel", a->options.max_grad_rel,
                     "largest allowed ||g - g_ref|| / ||g_ref|| over parameters (with --grads)")
          ->capture_default_str();
      app.add_option("--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
      app.add_flag("--json", a->json, "print JSON to stdout");
      a->compute.Add(app);
      return [a] {
        const replica::ComputeSettings compute = a->compute.Apply();
        a->options.precision = compute.precision;
        a->options.compute = compute.ToJson();
        replica::SetNumThreads(a->threads);
        replica::ParityReport r = replica::RunParity(a->options);
        if (a->json) {
          std::printf("%s\n", r.ToJson().dump(2).c_str());
        } else {
          std::fputs(r.ToText().c_str(), stdout);
        }
        return r.pass ? 0 : 1;
      };
    });

}  // namespace
