// `replica tokenizer encode|decode|info`: the tokenizer on JSONL, one object per line.
//   encode: {"text": ...} -> {"ids": [...]}   ("id" is copied through when present)
//   decode: {"ids": [...]} -> {"text": ...}   (bytes that are not valid UTF-8 become U+FFFD)
//   bench:  encode every "text" of a JSONL file on --threads threads, report MB/s (wall and per
//           CPU-second; MB = 10^6 bytes of UTF-8 text)
// Blank lines are skipped; a malformed line is an Error naming file:line (exit 2).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/validators.h"
#include "core/json_parse.h"
#include "core/error.h"
#include "core/plural.h"
#include "core/threads.h"
#include "tokenizer/text_reader.h"
#include "core/clock.h"
#include "tokenizer/tokenizer_batch.h"
#include "tokenizer/tokenizer_registry.h"

namespace {

using nlohmann::json;

struct Args {
  std::string tokenizer = "dolma2";
  std::string jsonl;
  std::string text;
  bool json = false;
  int threads = 0, repeat = 3;
};


template <typename Fn>
void ForEachJsonLine(const std::string& path, Fn fn) {
  replica::TextReader reader(path);
  std::string line;
  uint64_t n = 0;
  while (reader.ReadLine(&line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = fmt::format("{}:{}", path == "-" ? "<stdin>" : path, n);
    const json j = replica::ParseJson(line, where);
    replica::Require(j.is_object(), "{}: expected a JSON object", where);
    try {
      fn(j, where);
    } catch (const replica::Error& e) {
      if (std::string_view(e.what()).starts_with(where)) throw;
      replica::Fail("{}: {}", where, e.what());
    }
  }
}

// Times EncodeBatch over all texts of a JSONL file; best of `repeat` runs after one warm-up.
int RunBench(const replica::Tokenizer& tok, const Args& a) {
  std::vector<std::string> texts;
  ForEachJsonLine(a.jsonl, [&](const json& j, const std::string& where) {
    auto it = j.find("text");
    replica::Require(it != j.end() && it->is_string(), "{}: expected a string field \"text\"", where);
    texts.push_back(it->get<std::string>());
  });
  std::vector<std::string_view> views(texts.begin(), texts.end());
  uint64_t bytes = 0, tokens = 0;
  for (const auto& t : texts) bytes += t.size();
  double best_wall = 1e300, best_cpu = 1e300;
  replica::Require(a.repeat >= 1, "--repeat must be at least 1");
  for (int r = 0; r <= a.repeat; ++r) {
    auto w0 = std::chrono::steady_clock::now();
    double c0 = replica::ProcessCpuSeconds();
    auto ids = replica::EncodeBatch(tok, views);
    double cpu = replica::ProcessCpuSeconds() - c0;
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    tokens = 0;
    for (const auto& v : ids) tokens += v.size();
    if (r == 0) continue;  // warm-up: page faults, allocator, regex JIT state
    best_wall = std::min(best_wall, wall);
    best_cpu = std::min(best_cpu, cpu);
  }
  double mb = static_cast<double>(bytes) / 1e6;
  json j = {{"texts", texts.size()},           {"bytes", bytes},
            {"tokens", tokens},                {"threads", replica::NumThreads()},
            {"repeat", a.repeat},              {"wall_s", best_wall},
            {"cpu_s", best_cpu},               {"mb_per_s", mb / best_wall},
            {"mb_per_cpu_s", mb / best_cpu}};
  if (a.json) {
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{}, {:.2f} MB, {} on {}: {:.2f} MB/s wall, {:.2f} MB per CPU-second\n",
               replica::Plural(static_cast<int64_t>(texts.size()), "text"), mb,
               replica::Plural(static_cast<int64_t>(tokens), "token"),
               replica::Plural(replica::NumThreads(), "thread"), mb / best_wall, mb / best_cpu);
  }
  return 0;
}

void AddTokenizerOption(CLI::App* app, Args* a) {
  app->add_option("--tokenizer", a->tokenizer,
                  "'dolma2' or the path of a Hugging Face tokenizer.json")
      ->capture_default_str();
}

replica::cli::CommandRegistration reg(
    "tokenizer", "encode or decode JSONL with a tokenizer; show its vocabulary facts",
    [](CLI::App& app) -> replica::cli::RunFn {
      app.require_subcommand(1);
      auto a = std::make_shared<Args>();
      CLI::App* enc = app.add_subcommand("encode", "{\"text\": ...} lines -> {\"ids\": [...]} lines");
      AddTokenizerOption(enc, a.get());
      auto* jsonl_opt = enc->add_option("--jsonl", a->jsonl, "input JSONL ('-' = stdin; .gz/.zst ok)");
      enc->add_option("--text", a->text, "encode this one text instead")->excludes(jsonl_opt);
      CLI::App* dec = app.add_subcommand("decode", "{\"ids\": [...]} lines -> {\"text\": ...} lines");
      AddTokenizerOption(dec, a.get());
      dec->add_option("--jsonl", a->jsonl, "input JSONL ('-' = stdin; .gz/.zst ok)")->required();
      CLI::App* info = app.add_subcommand("info", "vocabulary size, special ids, source file");
      AddTokenizerOption(info, a.get());
      info->add_flag("--json", a->json, "print JSON on stdout");
      CLI::App* bench = app.add_subcommand("bench", "encoding throughput on the texts of a JSONL file");
      AddTokenizerOption(bench, a.get());
      bench->add_option("--jsonl", a->jsonl, "input JSONL ('-' = stdin; .gz/.zst ok)")->required();
      bench->add_option("--threads", a->threads, "threads, 1 to 1024 (default: all cores)")
          ->check(replica::cli::Between(1, replica::kMaxThreads).description(""));
      bench->add_option("--repeat", a->repeat, "timed runs (best is reported)")->capture_default_str();
      bench->add_flag("--json", a->json, "print JSON on stdout");
      return [a, enc, dec, info, bench]() -> int {
        if (bench->parsed()) replica::SetNumThreads(a->threads);
        const replica::Tokenizer& tok = replica::SharedTokenizer(a->tokenizer);
        if (bench->parsed()) return RunBench(tok, *a);
        if (enc->parsed()) {
          if (a->jsonl.empty()) {
            replica::Require(enc->count("--text") > 0, "tokenizer encode: give --jsonl or --text");
            fmt::print("{}\n", json{{"ids", tok.Encode(a->text)}}.dump());
            return 0;
          }
          ForEachJsonLine(a->jsonl, [&](const json& j, const std::string& where) {
            auto it = j.find("text");
            replica::Require(it != j.end() && it->is_string(), "{}: expected a string field \"text\"",
                             where);
            json out;
            if (j.contains("id")) out["id"] = j["id"];
            out["ids"] = tok.Encode(it->get_ref<const std::string&>());
            fmt::print("{}\n", out.dump());
          });
        } else if (dec->parsed()) {
          ForEachJsonLine(a->jsonl, [&](const json& j, const std::string& where) {
            auto it = j.find("ids");
            replica::Require(it != j.end() && it->is_array(), "{}: expected an array field \"ids\"",
                             where);
            std::vector<uint32_t> ids;
            for (const json& v : *it) {
              replica::Require(v.is_number_unsigned() && v.get<uint64_t>() <= 0xFFFFFFFFull,
                               "{}: ids must be non-negative integers", where);
              ids.push_back(v.get<uint32_t>());
            }
            json out;
            if (j.contains("id")) out["id"] = j["id"];
            out["text"] = tok.Decode(ids);
            fmt::print("{}\n", out.dump(-1, ' ', false, json::error_handler_t::replace));
          });
        } else if (info->parsed()) {
          json j = {{"name", tok.name()},
                    {"source", tok.info().source_path},
                    {"source_sha256", tok.info().source_sha256},
                    {"vocab_size", tok.vocab_size()},
                    {"embedding_rows", tok.embedding_rows()},
                    {"bpe_tokens", tok.bpe().num_tokens()},
                    {"merges", tok.bpe().num_merges()},
                    {"added_tokens", tok.added_tokens().tokens().size()},
                    {"pattern", tok.pretokenizer().pattern()},
                    {"regex_jit", tok.pretokenizer().jit()}};
          j["eos_id"] = tok.eos_id() ? json(*tok.eos_id()) : json(nullptr);
          j["pad_id"] = tok.pad_id() ? json(*tok.pad_id()) : json(nullptr);
          if (a->json) {
            fmt::print("{}\n", j.dump());
          } else {
            for (const auto& [k, v] : j.items()) fmt::print("{:15} {}\n", k, v.dump());
          }
        }
        return 0;
      };
    });

}  // namespace
