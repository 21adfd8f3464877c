// `replica decon --train TOKENFILES... --eval JSONL... --json` (docs/design.md §5): scans tokenized
// training data for registered eval items; exit 1 when more than --threshold items are
// contaminated. Thin: parsing here, the work in src/eval/decon.*.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/validators.h"
#include "core/error.h"
#include "core/log.h"
#include "core/plural.h"
#include "core/progress.h"
#include "core/threads.h"
#include "eval/decon.h"
#include "eval/eval_set.h"
#include "eval/text_encoder.h"

namespace replica::cli {
namespace {

struct DeconArgs {
  std::vector<std::string> train, eval;
  std::string tokenizer = "dolma2", dtype = "uint32";
  eval::DeconOptions options;
  int stride = 0;
  int64_t threshold = 0;
  int threads = 0;
  size_t max_hits = 100;
  bool json = false, no_progress = false;
};

int RunDecon(const DeconArgs& a) {
  if (a.threads > 0) SetNumThreads(a.threads);
  eval::DeconOptions opt = a.options;
  if (a.stride > 0) opt.stride_ppl = opt.stride_mc = a.stride;
  Require(opt.min_coverage > 0 && opt.min_coverage <= 1, "--min-coverage must be in (0, 1] (got {})",
          opt.min_coverage);
  Require(a.threshold >= 0, "--threshold must be >= 0 (got {})", a.threshold);
  Require(a.dtype == "uint32" || a.dtype == "uint16", "--dtype must be uint32 or uint16 (got {})", a.dtype);
  // The bytes tokenizer (tests) has no model config here: ids 256/257 are its EOS/pad.
  auto encoder = eval::MakeTextEncoder(a.tokenizer, 256, 257);
  std::vector<eval::EvalSet> sets;
  for (const std::string& p : a.eval) sets.push_back(eval::LoadEvalSet(p));
  eval::NgramIndex index = eval::BuildDeconIndex(sets, *encoder, opt);
  std::unique_ptr<ProgressMeter> meter;
  eval::DeconReport report = eval::ScanTokenFiles(
      index, a.train, a.dtype == "uint16" ? 2 : 4,
      [&](uint64_t done, uint64_t total, const std::string& file) {
        if (!meter)
          meter = std::make_unique<ProgressMeter>("decon", "tokens", static_cast<int64_t>(total),
                                                  !a.no_progress);
        meter->Update(static_cast<int64_t>(done), file);
      });
  if (meter) meter->Finish();
  nlohmann::json j = report.ToJson(index, opt, a.max_hits);
  j["threshold"] = a.threshold;
  j["tokenizer"] = encoder->name();
  const int64_t contaminated = j["contaminated_items"].get<int64_t>();
  j["pass"] = contaminated <= a.threshold;
  if (a.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("eval items: %zu (%zu not indexable: shorter than their n-gram)\n", index.items().size(),
                index.unindexed().size());
    std::printf("training tokens scanned: %llu in %.3f s (%.1f M tokens/s, %s; %.1f M "
                "tokens per CPU second)\n",
                static_cast<unsigned long long>(report.train_tokens), report.scan_seconds,
                j["tokens_per_s"].get<double>() / 1e6, Plural(report.threads, "thread").c_str(),
                j["tokens_per_cpu_s"].get<double>() / 1e6);
    for (const auto& it : j["items"]) {
      std::printf("%s %s %s: coverage %.3f, longest span %llu tokens, %zu hits\n",
                  it["contaminated"].get<bool>() ? "CONTAMINATED" : "overlap     ",
                  it["eval_file"].get<std::string>().c_str(), it["id"].get<std::string>().c_str(),
                  it["coverage"].get<double>(), it["longest"].get<unsigned long long>(),
                  it["hits_total"].get<size_t>());
    }
    std::printf("contaminated items: %lld (threshold %lld): %s\n", static_cast<long long>(contaminated),
                static_cast<long long>(a.threshold), contaminated <= a.threshold ? "pass" : "FAIL");
  }
  return contaminated <= a.threshold ? 0 : 1;
}

CommandRegistration reg(
    "decon", "find registered eval items inside tokenized training data (exit 1 if contaminated)",
    [](CLI::App& app) -> RunFn {
      auto a = std::make_shared<DeconArgs>();
      app.add_option("--train", a->train, "training token files (headerless uint32/uint16)")
          ->required()->expected(1, -1);
      app.add_option("--eval", a->eval, "evaluation sets (JSONL, .zst/.gz allowed)")
          ->required()->expected(1, -1);
      app.add_option("--tokenizer", a->tokenizer, "tokenizer of the training data: dolma2 | bytes")
          ->capture_default_str();
      app.add_option("--dtype", a->dtype, "token width of the training files: uint32 | uint16")
          ->capture_default_str();
      app.add_option("--ngram-ppl", a->options.ngram_ppl, "n-gram length for perplexity documents")
          ->capture_default_str()->check(replica::cli::Between(1, 1000));
      app.add_option("--ngram-mc", a->options.ngram_mc, "n-gram length for question + gold answer")
          ->capture_default_str()->check(replica::cli::Between(1, 1000));
      app.add_option("--stride", a->stride, "probe stride for both n-gram lengths (overrides the two below)")
          ->check(replica::cli::Between(1, 1000));
      app.add_option("--stride-ppl", a->options.stride_ppl, "probe stride for perplexity n-grams")
          ->capture_default_str()->check(replica::cli::Between(1, 1000));
      app.add_option("--stride-mc", a->options.stride_mc, "probe stride for multiple-choice n-grams")
          ->capture_default_str()->check(replica::cli::Between(1, 1000));
      app.add_option("--min-coverage", a->options.min_coverage,
                     "an item is contaminated when confirmed spans cover this fraction of it")
          ->capture_default_str();
      app.add_option("--min-span", a->options.min_span,
                     "... or when one confirmed span is at least this many tokens")
          ->capture_default_str()->check(replica::cli::Between(1, int64_t{1} << 40));
      app.add_option("--threshold", a->threshold, "exit 1 when more items than this are contaminated")
          ->capture_default_str();
      app.add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      app.add_option("--max-hits", a->max_hits, "hits listed per item in the JSON")->capture_default_str();
      app.add_flag("--json", a->json, "print JSON on stdout");
      app.add_flag("--no-progress", a->no_progress,
                   "no progress line on stderr (tokens scanned, ETA)");
      return [a] { return RunDecon(*a); };
    });

}  // namespace
}  // namespace replica::cli
