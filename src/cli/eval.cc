// `replica eval --model DIR|CKPT --eval JSONL... --json` (docs/design.md §5): held-out perplexity and
// multiple-choice metrics of a Hugging Face directory or a replica checkpoint, plus the paired
// canaries when --canaries is given. Thin: parsing here, the work in src/eval/.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/validators.h"
#include "cli/compute_flags.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/threads.h"
#include "eval/eval_suite.h"
#include "eval/model_loader.h"
#include "eval/text_encoder.h"

namespace replica::cli {
namespace {

struct EvalArgs {
  std::string model;
  std::vector<std::string> sets;
  std::string tokenizer = "dolma2";
  std::string canaries;
  int64_t canary_vocab = 0;
  double canary_alarm_z = 4.0;
  int64_t seq_len = 0, batch = 4;
  bool truncate_context = false;
  int threads = 0;
  bool json = false, no_progress = false;
  ComputeFlags compute;
};

int RunEval(const EvalArgs& a) {
  const ComputeSettings compute = a.compute.Apply();
  if (a.threads > 0) SetNumThreads(a.threads);
  Require(a.batch >= 1, "--batch must be at least 1 (got {})", a.batch);
  const auto t0 = std::chrono::steady_clock::now();
  eval::EvalModel m = eval::LoadEvalModel(a.model, a.seq_len, a.compute.SelectBackend(compute));
  const int64_t seq_len = m.max_seq;
  const ModelConfig& cfg = m.model->config();
  auto encoder = eval::MakeTextEncoder(a.tokenizer, static_cast<int32_t>(cfg.eos_token_id),
                                       static_cast<int32_t>(cfg.pad_token_id));
  eval::EvalSuiteOptions o;
  o.seq_len = seq_len;
  o.batch_size = a.batch;
  o.truncate_context = a.truncate_context;
  o.canary_path = a.canaries;
  o.canary_vocab = a.canary_vocab > 0 ? a.canary_vocab : (a.tokenizer == "dolma2" ? 100256 : 256);
  o.canary_alarm_z = a.canary_alarm_z;
  eval::EvalSuite suite(a.sets, *encoder, o);
  ProgressMeter meter("eval", "positions", suite.WorkPositions(), !a.no_progress);
  nlohmann::json metrics =
      suite.Run(eval::ModelLossFn(*m.model),
                [&](int64_t done, int64_t, const std::string& set) { meter.Update(done, set); });
  meter.Finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json out = {{"model", m.source}, {"seq_len", seq_len}, {"tokenizer", encoder->name()},
                        {"eval", metrics}, {"seconds", seconds},
                        {"compute", compute.ToJson()}};
  if (m.step >= 0) out["step"] = m.step;
  const bool alarm = metrics.contains("canary") && metrics["canary"]["alarm"].get<bool>();
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("model %s, seq_len %lld, tokenizer %s\n", m.source.c_str(),
                static_cast<long long>(seq_len), encoder->name().c_str());
    for (const auto& [name, r] : metrics.items()) {
      if (name == "canary") {
        std::printf("%-28s registered %.4f  twin %.4f  gap %+.4f  z %.2f%s\n", "canary",
                    r["registered_ce"].get<double>(), r["twin_ce"].get<double>(), r["gap"].get<double>(),
                    r["z"].get<double>(), r["alarm"].get<bool>() ? "  ALARM" : "");
      } else if (r["kind"] == "perplexity") {
        std::printf("%-28s ce_loss %.4f  ppl %.3f  (%lld docs, %lld tokens, %lld truncated)\n",
                    name.c_str(), r["ce_loss"].get<double>(), r["ppl"].get<double>(),
                    r["docs"].get<long long>(), r["tokens"].get<long long>(), r["truncated_docs"].get<long long>());
      } else {
        std::printf("%-28s acc %.4f  len_norm_acc %.4f  bpb %.4f  (%lld items)\n", name.c_str(),
                    r["acc"].get<double>(), r["len_norm_acc"].get<double>(), r["bpb"].get<double>(),
                    r["items"].get<long long>());
      }
    }
    std::printf("%.1f s\n", seconds);
  }
  return alarm ? 1 : 0;
}

CommandRegistration reg(
    "eval", "held-out perplexity and multiple-choice metrics of a model or checkpoint",
    [](CLI::App& app) -> RunFn {
      auto a = std::make_shared<EvalArgs>();
      app.add_option("--model", a->model, "Hugging Face model directory, checkpoint step-* directory or run directory")
          ->required();
      app.add_option("--eval", a->sets, "evaluation sets (JSONL; .zst/.gz allowed)")->expected(1, -1);
      app.add_option("--seq-len", a->seq_len, "sequence length: documents are truncated to it (default: min(max_position_embeddings, 2048))")
          ->check(Between(2, int64_t{1} << 20));
      app.add_option("--batch", a->batch, "perplexity instances per forward pass")->capture_default_str();
      app.add_option("--tokenizer", a->tokenizer, "dolma2 | bytes (one id per byte; tiny test models)")
          ->capture_default_str();
      app.add_option("--canaries", a->canaries, "registered canary set (JSONL of {\"id\",\"tokens\"})");
      app.add_option("--canary-vocab", a->canary_vocab, "twin canary ids are drawn from [0, V) (default: 100256 for dolma2, 256 for bytes)");
      app.add_option("--canary-alarm-z", a->canary_alarm_z, "alarm when the registered canaries are easier by this many standard errors")
          ->capture_default_str();
      app.add_flag("--truncate-context", a->truncate_context, "left-truncate multiple-choice contexts that do not fit (OLMES) instead of failing");
      app.add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      app.add_flag("--json", a->json, "print JSON on stdout");
      app.add_flag("--no-progress", a->no_progress,
                   "no progress line on stderr (percent, ETA and the set being scored)");
      a->compute.Add(app);
      return [a] {
        Require(!a->sets.empty() || !a->canaries.empty(), "eval: give at least one --eval set or --canaries");
        return RunEval(*a);
      };
    });

}  // namespace
}  // namespace replica::cli
