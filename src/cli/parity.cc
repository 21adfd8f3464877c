// `replica parity`: logits (and gradients) of replica's model against a reference dump, or two
// models against each other on the same tokens (--against) (docs/design.md §5). Exit 0 when every
// threshold holds, 1 when one does not, 2 on bad input.
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "cli/validators.h"
#include "cli/compute_flags.h"
#include "core/error.h"
#include "core/threads.h"
#include "eval/parity.h"

namespace {

struct ParityArgs {
  replica::ParityOptions options;
  replica::ModelParityOptions against;
  bool json = false, no_progress = false;
  int threads = 0;
  std::string rope_table = "own";
  replica::cli::ComputeFlags compute;
};

replica::cli::CommandRegistration reg(
    "parity",
    "compare the model's logits/gradients with a reference dump, or with another model (--against)",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto a = std::make_shared<ParityArgs>();
      app.add_option("--model", a->options.model_dir,
                     "model: Hugging Face directory (config.json + weights, sharded or not), "
                     "checkpoint or run directory")
          ->required();
      auto* ref = app.add_option(
          "--reference", a->options.reference_path,
          "reference dump (.safetensors: input_ids, logits, [labels, loss, grad.*])");
      auto* against = app.add_option("--against", a->against.against_dir,
                                     "second model (same kinds as --model), the reference: KL(P_B || P_A)");
      ref->excludes(against);
      app.add_flag("--grads", a->options.grads, "also compare every parameter gradient (--reference)");
      app.add_option("--z-loss", a->options.z_loss_multiplier,
                     "--grads: compare the gradients of mean CE + this x mean lse^2 (OLMo-core's "
                     "z_loss_multiplier, the trainer's objective) instead of the mean CE")
          ->capture_default_str()
          ->check(CLI::NonNegativeNumber);
      app.add_option("--tokens", a->against.tokens_path,
                     "--against: raw uint32 token file; its first batch x seq-len ids are the input")
          ->check(CLI::ExistingFile);
      app.add_option("--seed", a->against.seed, "--against without --tokens: seed of the uniform random ids")
          ->capture_default_str();
      app.add_option("--batch", a->against.batch, "--against: sequences")->capture_default_str();
      app.add_option("--seq-len", a->against.seq_len,
                     "--against: tokens per sequence (default: 512, or the shorter context of the "
                     "two models)")
          ->check(replica::cli::AtLeast(1));
      app.add_option("--chunk-rows", a->against.chunk_rows,
                     "--against: positions whose logits are made at once")
          ->capture_default_str();
      app.add_option("--max-kl", a->options.max_kl,
                     "largest allowed per-position KL(P_ref || P_model)")
          ->capture_default_str();
      app.add_option("--min-top1", a->options.min_top1,
                     "smallest allowed fraction of positions with the same argmax")
          ->capture_default_str();
      app.add_option("--max-grad-rel", a->options.max_grad_rel,
                     "largest allowed ||g - g_ref|| / max(||g_ref||, floor) over parameters, and "
                     "||G - G_ref|| / ||G_ref|| of the whole gradient (with --grads)")
          ->capture_default_str();
      app.add_option("--grad-floor", a->options.grad_floor,
                     "floor of the per-tensor denominator as a fraction of the whole reference "
                     "gradient's norm (a tensor whose gradient is zero, e.g. q/k at T = 1)")
          ->capture_default_str()
          ->check(replica::cli::NonNegative());
      app.add_option("--rope-table", a->rope_table,
                     "own (this machine's sin and cos) | reference (the dump's rope.cos and "
                     "rope.sin: compares everything but the two stacks' sin and cos)")
          ->capture_default_str()
          ->check(CLI::IsMember({"own", "reference"}));
      app.add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      app.add_flag("--json", a->json, "print JSON on stdout");
      app.add_flag("--no-progress", a->no_progress,
                   "--against: no progress line on stderr (layers of both models, logit chunks)");
      a->compute.Add(app);
      return [a] {
        const replica::ComputeSettings compute = a->compute.Apply();
        a->options.precision = compute.precision;
        a->options.compute = compute.ToJson();
        replica::SetNumThreads(a->threads);
        replica::ParityReport r;
        if (!a->against.against_dir.empty()) {
          replica::Require(!a->options.grads, "parity: --grads needs --reference (a dump with grad.*)");
          replica::Require(a->rope_table == "own",
                           "parity: --rope-table reference needs --reference (a dump with "
                           "rope.cos and rope.sin)");
          replica::Require(a->options.z_loss_multiplier == 0,
                           "parity: --z-loss needs --reference and --grads");
          a->against.model_dir = a->options.model_dir;
          a->against.max_kl = a->options.max_kl;
          a->against.min_top1 = a->options.min_top1;
          a->against.precision = a->options.precision;
          a->against.compute = a->options.compute;
          a->against.progress = !a->no_progress;
          r = replica::RunParityAgainst(a->against);
        } else {
          replica::Require(!a->options.reference_path.empty(),
                           "parity: give --reference DUMP or --against MODEL");
          replica::Require(a->options.z_loss_multiplier == 0 || a->options.grads,
                           "parity: --z-loss {} chooses the gradient compared; it needs --grads",
                           a->options.z_loss_multiplier);
          a->options.reference_rope = a->rope_table == "reference";
          r = replica::RunParity(a->options);
        }
        if (a->json) {
          std::printf("%s\n", r.ToJson().dump(2).c_str());
        } else {
          std::fputs(r.ToText().c_str(), stdout);
        }
        return r.pass ? 0 : 1;
      };
    });

}  // namespace
