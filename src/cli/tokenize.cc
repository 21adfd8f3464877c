// `replica tokenize --tokenizer dolma2 INPUTS... --out DIR`: text / JSONL (.gz/.zst) -> OLMo-core
// numpy token files plus manifest.json (src/tokenizer/tokenize_to_disk.h; docs/tokenizer.md).
#include <unistd.h>

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/validators.h"
#include "core/error.h"
#include "core/plural.h"
#include "core/threads.h"
#include "tokenizer/tokenize_to_disk.h"
#include "tokenizer/tokenizer_registry.h"

namespace {

struct TokenizeArgs {
  std::string tokenizer = "dolma2";
  std::vector<std::string> inputs;
  std::string out;
  std::string dtype;
  int threads = 0;
  int64_t eos_id = -1;
  CLI::Option* eos_option = nullptr;
  bool json = false;
  bool progress = false, no_progress = false;
};

replica::cli::CommandRegistration reg(
    "tokenize", "tokenize text / JSONL (.gz, .zst) into OLMo-core numpy token files",
    [](CLI::App& app) -> replica::cli::RunFn {
      auto a = std::make_shared<TokenizeArgs>();
      app.add_option("--tokenizer", a->tokenizer,
                     "'dolma2' or the path of a Hugging Face tokenizer.json")
          ->capture_default_str();
      app.add_option("inputs", a->inputs,
                     "input files: *.jsonl / *.ndjson (one {\"text\": ...} per line) or any other "
                     "file (one document); .gz / .zst compressed allowed")
          ->required();
      app.add_option("--out", a->out, "output directory (created if missing)")->required();
      app.add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      a->eos_option = app.add_option("--eos-id", a->eos_id,
                                     "EOS id appended after each document (default: the "
                                     "tokenizer's, 100257 for dolma2)");
      app.add_option("--dtype", a->dtype, "uint16 or uint32 (default: smallest that fits)");
      app.add_flag("--json", a->json, "print the summary as JSON on stdout");
      app.add_flag("--progress", a->progress, "progress line on stderr (default: when a terminal)");
      app.add_flag("--no-progress", a->no_progress, "no progress line");
      return [a] {
        replica::SetNumThreads(a->threads);
        const replica::Tokenizer& tok = replica::SharedTokenizer(a->tokenizer);
        replica::TokenizeOptions opt;
        opt.out_dir = a->out;
        opt.dtype = a->dtype;
        if (a->eos_option->count() > 0) {
          // Ids are int32 everywhere downstream; the tokenizer's vocabulary bound is checked by
          // TokenizeToDisk.
          replica::Require(a->eos_id >= 0 && a->eos_id <= INT32_MAX,
                           "--eos-id {}: not a token id (expected 0 .. {})", a->eos_id, INT32_MAX);
          opt.eos_id = static_cast<uint32_t>(a->eos_id);
        }
        opt.progress = !a->no_progress && (a->progress || ::isatty(2));
        replica::TokenizeSummary s = replica::TokenizeToDisk(tok, a->inputs, opt);
        double mbps = s.seconds > 0 ? static_cast<double>(s.text_bytes) / 1e6 / s.seconds : 0.0;
        if (a->json) {
          nlohmann::json j = {{"documents", s.documents},   {"skipped_empty", s.skipped_empty},
                              {"tokens", s.tokens},         {"text_bytes", s.text_bytes},
                              {"input_bytes", s.input_bytes}, {"seconds", s.seconds},
                              {"cpu_seconds", s.cpu_seconds},
                              {"mb_per_s", mbps},           {"threads", s.threads},
                              {"dtype", s.dtype},           {"manifest", s.manifest_path}};
          j["outputs"] = nlohmann::json::array();
          for (const auto& f : s.files) {
            j["outputs"].push_back({{"path", f.output}, {"tokens", f.tokens},
                                    {"documents", f.documents}, {"sha256", f.output_sha256}});
          }
          fmt::print("{}\n", j.dump());
        } else {
          fmt::print("tokenized {} ({} empty skipped) from {}: {} ({}), "
                     "{:.2f} MB of text in {:.2f} s = {:.2f} MB/s on {} ({:.2f} CPU s)\n",
                     replica::Plural(static_cast<int64_t>(s.documents), "document"),
                     s.skipped_empty, replica::Plural(static_cast<int64_t>(s.files.size()), "file"),
                     replica::Plural(static_cast<int64_t>(s.tokens), "token"), s.dtype,
                     static_cast<double>(s.text_bytes) / 1e6, s.seconds, mbps,
                     replica::Plural(s.threads, "thread"), s.cpu_seconds);
          for (const auto& f : s.files) fmt::print("  {}  {} tokens\n", f.output, f.tokens);
          fmt::print("manifest: {}\n", s.manifest_path);
        }
        return 0;
      };
    });

}  // namespace
