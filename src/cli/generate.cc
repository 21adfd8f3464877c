// `replica generate --model DIR (--prompt TEXT... | --prompts FILE.jsonl)`: continues each prompt
// with the KV-cache decoder (infer/), greedy or sampled, streaming the text to stdout as tokens
// come; tokens/s on stderr at the end. Exit 2 on bad input (a prompt longer than the context, a
// missing shard, an unknown tokenizer...). A token budget past the context stops there with a
// warning, as transformers stops at max_length.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/compute_flags.h"
#include "cli/validators.h"
#include "core/json_parse.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/threads.h"
#include "infer/generate.h"
#include "infer/memory_bandwidth.h"
#include "infer/model_weights.h"
#include "infer/sampler.h"
#include "ops/registry.h"
#include "tokenizer/tokenizer_registry.h"

namespace replica::cli {
namespace {

struct GenerateArgs {
  std::string model, tokenizer = "dolma2", prompts_file;
  std::vector<std::string> prompts;
  int64_t max_new_tokens = 64, context = 0;
  SamplingOptions sampling;
  std::string weights = "auto";
  bool ignore_eos = false, json = false, report_bound = false, tokenizer_given = false;
  int threads = 0;
  ComputeFlags compute;
};

// Text <-> ids: a loaded tokenizer, or one id per byte ("bytes", for tiny test models).
class Codec {
 public:
  explicit Codec(const std::string& spec) {
    if (spec != "bytes") tok_ = &SharedTokenizer(spec);
  }
  std::vector<int32_t> Encode(const std::string& text) const {
    if (!tok_) {  // bytes 0x80..0xff are ids 128..255
      std::vector<int32_t> ids;
      for (const unsigned char ch : text) ids.push_back(ch);
      return ids;
    }
    std::vector<uint32_t> ids = tok_->Encode(text);
    return {ids.begin(), ids.end()};
  }
  std::string Bytes(int32_t id) const {
    if (!tok_) return id >= 0 && id < 256 ? std::string(1, static_cast<char>(id)) : std::string();
    return id >= 0 && static_cast<uint32_t>(id) < tok_->vocab_size()
               ? std::string(tok_->TokenBytes(static_cast<uint32_t>(id)))
               : std::string();
  }

 private:
  const Tokenizer* tok_ = nullptr;
};

std::vector<std::string> ReadPrompts(const std::string& path) {
  std::string text;
  try {
    text = ReadFile(path);  // a regular file only: a FIFO, directory or device is refused
  } catch (const Error& e) {
    Fail("--prompts {}", e.what());
  }
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = ParseJson(line, fmt::format("--prompts {}:{}", path, n));
    const char* key = j.is_object() && j.contains("prompt") ? "prompt" : "text";
    Require(j.is_object() && j.contains(key) && j[key].is_string(),
            "--prompts {}:{}: expected an object with a string \"prompt\" (or \"text\")", path, n);
    out.push_back(j[key].get<std::string>());
  }
  Require(!out.empty(), "--prompts {}: {}, no prompt in it", path,
          text.empty() ? "the file is empty" : "only blank lines");
  return out;
}

int RunGenerate(const GenerateArgs& a) {
  if (a.threads > 0) SetNumThreads(a.threads);
  std::vector<std::string> prompts = a.prompts;
  if (!a.prompts_file.empty()) {
    std::vector<std::string> more = ReadPrompts(a.prompts_file);
    prompts.insert(prompts.end(), more.begin(), more.end());
  }
  Require(!prompts.empty(), "generate: give --prompt TEXT or --prompts FILE.jsonl");
  (void)Sampler(a.sampling);  // --temperature, --top-k, --top-p before the weights are read
  // Without --tokenizer, the model directory's own tokenizer.json when it has one.
  std::string tokenizer = a.tokenizer;
  if (!a.tokenizer_given) {
    const std::filesystem::path own = std::filesystem::path(a.model) / "tokenizer.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(own, ec)) {
      tokenizer = own.string();
      std::fprintf(stderr, "generate: tokenizer %s (the model directory's)\n", tokenizer.c_str());
    }
  }
  // bf16-fsdp rounds every op's output where torch's FSDP training step does; the decode step's
  // matrix-vector products and cached attention have no such rounding, so a prefill and its
  // steps would not be one model.
  Require(a.compute.ParsedPrecision() != Precision::kBf16Fsdp,
          "generate: --precision bf16-fsdp is for training and evaluation; decoding runs fp32 or "
          "bf16 (bf16 matmul inputs, fp32 accumulation)");
  const ComputeSettings compute = a.compute.Apply();
  InferenceModel model(ModelWeights::Open(a.model), a.compute.SelectBackend(compute));
  const ModelConfig& c = model.config();
  const Codec codec(tokenizer);
  std::vector<std::vector<int32_t>> ids;
  int64_t longest = 0;
  for (const std::string& p : prompts) {
    ids.push_back(codec.Encode(p));
    Require(!ids.back().empty(), "generate: prompt {} is empty", ids.size());
    for (int32_t t : ids.back()) {
      Require(t >= 0 && t < c.vocab_size, "generate: prompt {} encodes to id {}, outside the model's "
              "vocabulary of {} (wrong --tokenizer?)", ids.size(), t, c.vocab_size);
    }
    longest = std::max<int64_t>(longest, static_cast<int64_t>(ids.back().size()));
  }
  const int64_t max_pos = c.max_position_embeddings > 0 ? c.max_position_embeddings : INT64_MAX;
  const int64_t context = a.context > 0 ? a.context : std::min(max_pos, longest + a.max_new_tokens);
  // A prompt must fit the context; its new tokens stop where the context ends.
  std::vector<int64_t> budget(ids.size(), a.max_new_tokens);
  const char* context_from = a.context > 0 ? " (--context)" : " (max_position_embeddings)";
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto n = static_cast<int64_t>(ids[i].size());
    Require(n < context, "generate: prompt {} has {} tokens: the context of {}{} leaves no room "
            "for a new token", i + 1, n, context, context_from);
    if (n + a.max_new_tokens > context) {
      budget[i] = context - n;
      std::fprintf(stderr,
                   "replica: warning: generate: prompt %zu has %lld tokens; with --max-new-tokens "
                   "%lld it would need %lld positions, more than the context of %lld%s: stopping "
                   "after %lld new tokens\n",
                   i + 1, static_cast<long long>(n), static_cast<long long>(a.max_new_tokens),
                   static_cast<long long>(n + a.max_new_tokens), static_cast<long long>(context),
                   context_from, static_cast<long long>(budget[i]));
    }
  }
  const Decoder::Weights placement = a.weights == "copy"     ? Decoder::Weights::kCopied
                                     : a.weights == "mapped" ? Decoder::Weights::kMapped
                                                             : Decoder::AutoWeights(model);
  const auto copy_t0 = std::chrono::steady_clock::now();
  Decoder decoder(model, context, placement);
  if (placement == Decoder::Weights::kCopied) {
    std::fprintf(stderr, "generate: weights copied to memory: %.2f GB in %.1f s (%.2f GB on huge pages)\n",
                 decoder.step_weight_bytes() / 1e9,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_t0).count(),
                 model.weights().copied_huge_bytes() / 1e9);
  }
  GenerateOptions o;
  o.max_new_tokens = a.max_new_tokens;
  o.eos_token_id = a.ignore_eos ? -1 : c.eos_token_id;
  o.sampling = a.sampling;
  int64_t new_tokens = 0, steps = 0, prompt_tokens = 0;
  double decode_s = 0, prefill_s = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    o.sampling.seed = a.sampling.seed + i;
    o.max_new_tokens = budget[i];
    std::string completion;
    if (!a.json) {
      std::fputs(prompts[i].c_str(), stdout);
      std::fflush(stdout);
    }
    const GenerateResult r = Generate(decoder, ids[i], o, [&](int32_t t) {
      const std::string b = codec.Bytes(t);
      completion += b;
      if (!a.json) {
        std::fwrite(b.data(), 1, b.size(), stdout);
        std::fflush(stdout);
      }
    });
    if (a.json) {
      nlohmann::json j = {{"prompt", prompts[i]},
                          {"completion", completion},
                          {"prompt_tokens", ids[i].size()},
                          {"completion_ids", r.tokens},
                          {"stopped_at_eos", r.stopped_at_eos}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::fputs("\n", stdout);
    }
    std::fflush(stdout);
    new_tokens += static_cast<int64_t>(r.tokens.size());
    steps += r.steps;
    decode_s += r.decode_s;
    prefill_s += r.prefill_s;
    prompt_tokens += static_cast<int64_t>(ids[i].size());
  }
  std::fprintf(stderr,
               "generate: %lld new tokens; prefill %lld tokens in %.2f s (%.1f tokens/s); decode %lld "
               "steps in %.2f s: %.2f tokens/s (%.2f GB of weights per step, %s)\n",
               static_cast<long long>(new_tokens), static_cast<long long>(prompt_tokens), prefill_s,
               prefill_s > 0 ? prompt_tokens / prefill_s : 0.0, static_cast<long long>(steps),
               decode_s, decode_s > 0 ? steps / decode_s : 0.0, decoder.step_weight_bytes() / 1e9,
               placement == Decoder::Weights::kCopied ? "copied to memory" : "read from the file mapping");
  if (a.report_bound && steps > 0) {
    const double bw = MeasureReadBandwidth();
    const double bound = bw / static_cast<double>(decoder.step_weight_bytes());
    const double tps = steps / decode_s;
    std::fprintf(stderr,
                 "generate: memory read bandwidth %.2f GB/s (streaming read, same threads) -> bound "
                 "%.3f tokens/s for %.2f GB per step; measured %.3f tokens/s = %.1f%% of the bound\n",
                 bw / 1e9, bound, decoder.step_weight_bytes() / 1e9, tps, 100.0 * tps / bound);
  }
  return 0;
}

CommandRegistration reg(
    "generate", "continue prompts with a model (KV cache; greedy, temperature, top-k, top-p)",
    [](CLI::App& app) -> RunFn {
      auto a = std::make_shared<GenerateArgs>();
      app.add_option("--model", a->model,
                     "Hugging Face directory (bf16/f32, sharded or not), checkpoint or run directory")
          ->required();
      app.add_option("--prompt", a->prompts, "prompt text (repeatable)");
      app.add_option("--prompts", a->prompts_file, "JSONL of {\"prompt\": text} (or \"text\") lines");
      app.add_option("--tokenizer", a->tokenizer,
                     "dolma2 | bytes (one id per byte; tiny test models) | path/to/tokenizer.json "
                     "(default: the model directory's tokenizer.json, else dolma2)")
          ->each([a](const std::string&) { a->tokenizer_given = true; })
          ->capture_default_str();
      app.add_option("--max-new-tokens", a->max_new_tokens, "token budget per prompt, at least 1")
          ->capture_default_str()
          ->check(replica::cli::AtLeast(1));
      app.add_option("--temperature", a->sampling.temperature, "0 = greedy")->capture_default_str();
      app.add_option("--top-k", a->sampling.top_k, "sample among the k most likely (0 = all)")
          ->capture_default_str();
      app.add_option("--top-p", a->sampling.top_p, "nucleus sampling mass (1 = off)")
          ->capture_default_str();
      app.add_option("--seed", a->sampling.seed, "sampling seed (prompt i uses seed + i)")
          ->capture_default_str();
      app.add_option("--context", a->context,
                     "KV-cache positions (default: longest prompt + max-new-tokens, at most "
                     "max_position_embeddings)")
          ->check(AtLeast(1));
      app.add_flag("--report-bound", a->report_bound,
                   "after generating, measure memory read bandwidth and report decode tokens/s "
                   "against the bound (weight bytes per step / bandwidth)");
      app.add_option("--weights", a->weights,
                     "where decoding reads the weight matrices: copy (into huge-page memory once; "
                     "needs their size in RAM), mapped (the file mapping), auto (copy when they fit "
                     "in 80% of available memory)")
          ->check(CLI::IsMember({"auto", "copy", "mapped"}))
          ->capture_default_str();
      app.add_flag("--ignore-eos", a->ignore_eos, "do not stop at the end-of-sequence token");
      app.add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      app.add_flag("--json", a->json, "one object per prompt as JSON on stdout (no streamed text)");
      a->compute.Add(app);
      return [a] { return RunGenerate(*a); };
    });

}  // namespace
}  // namespace replica::cli
