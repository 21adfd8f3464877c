#include "tokenizer/tokenize_to_disk.h"

#include <omp.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/json_parse.h"
#include "core/clock.h"
#include "core/atomic_file.h"
#include "core/checksum.h"
#include "core/error.h"
#include "tokenizer/text_reader.h"
#include "tokenizer/tokenizer_batch.h"
#include "tokenizer/tokenizer_utf8.h"

namespace replica {
namespace {

namespace fs = std::filesystem;
// Token files are little-endian; ids are written from memory as they are.
static_assert(std::endian::native == std::endian::little, "token files need a little-endian host");
using Clock = std::chrono::steady_clock;

bool StripSuffix(std::string* s, std::string_view suffix) {
  if (s->size() > suffix.size() && s->ends_with(suffix)) {
    s->resize(s->size() - suffix.size());
    return true;
  }
  return false;
}

bool IsJsonl(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  StripSuffix(&name, ".gz") || StripSuffix(&name, ".zst") || StripSuffix(&name, ".zstd");
  return name.ends_with(".jsonl") || name.ends_with(".ndjson");
}

bool IsBlank(std::string_view s) {
  return s.find_first_not_of(" \t\r") == std::string_view::npos;
}

// One document read from an input, before and after parsing.
struct Doc {
  uint32_t file = 0;
  uint64_t line = 0;  // 1-based line for JSONL, 0 for a whole-file document
  bool json = false;
  std::string raw;    // the JSONL line, or the whole text
  std::string text;   // the text to encode (moved from raw for plain files)
  std::string error;  // set by the parallel parse
};

struct OutputFile {
  std::unique_ptr<AtomicFileWriter> writer;
  Sha256 sha;
};

class Progress {
 public:
  Progress(bool enabled, uint64_t total) : enabled_(enabled), total_(total), start_(Clock::now()) {}
  void Update(uint64_t raw_done, uint64_t text_bytes, uint64_t docs, uint64_t tokens) {
    if (!enabled_) return;
    double s = std::chrono::duration<double>(Clock::now() - start_).count();
    double pct = total_ > 0 ? 100.0 * static_cast<double>(raw_done) / static_cast<double>(total_) : 100.0;
    std::fprintf(stderr, "\r[tokenize] %5.1f%%  %llu docs  %llu tokens  %.1f MB/s   ", pct,
                 static_cast<unsigned long long>(docs), static_cast<unsigned long long>(tokens),
                 s > 0 ? static_cast<double>(text_bytes) / 1e6 / s : 0.0);
    std::fflush(stderr);
  }
  void Finish() {
    if (enabled_) std::fputc('\n', stderr);
  }

 private:
  bool enabled_;
  uint64_t total_;
  Clock::time_point start_;
};

std::string Where(const std::vector<TokenizedFile>& files, const Doc& d) {
  return d.line > 0 ? fmt::format("{}:{}", files[d.file].input, d.line) : files[d.file].input;
}

}  // namespace

std::string TokenFileNameFor(const std::string& input_path) {
  std::string name = fs::path(input_path).filename().string();
  StripSuffix(&name, ".gz") || StripSuffix(&name, ".zst") || StripSuffix(&name, ".zstd");
  StripSuffix(&name, ".jsonl") || StripSuffix(&name, ".ndjson") || StripSuffix(&name, ".txt");
  return name + ".npy";
}

TokenizeSummary TokenizeToDisk(const Tokenizer& tokenizer, const std::vector<std::string>& inputs,
                               const TokenizeOptions& options) {
  const auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds();
  Require(!inputs.empty(), "tokenize: no input files");
  Require(!options.out_dir.empty(), "tokenize: no output directory (--out)");
  const std::optional<uint32_t> eos = options.eos_id ? options.eos_id : tokenizer.eos_id();
  Require(eos.has_value(), "tokenize: tokenizer '{}' has no EOS token; give its id (--eos-id)",
          tokenizer.name());
  Require(*eos < tokenizer.vocab_size(), "tokenize: EOS id {} is outside the vocabulary (size {})",
          *eos, tokenizer.vocab_size());
  std::string dtype = options.dtype;
  if (dtype.empty()) dtype = tokenizer.vocab_size() <= 65536 ? "uint16" : "uint32";
  Require(dtype == "uint16" || dtype == "uint32", "tokenize: dtype '{}' is not uint16 or uint32",
          dtype);
  Require(dtype == "uint32" || tokenizer.vocab_size() <= 65536,
          "tokenize: dtype uint16 cannot hold ids of a {}-token vocabulary", tokenizer.vocab_size());
  const bool u16 = dtype == "uint16";

  TokenizeSummary summary;
  summary.dtype = dtype;
  summary.threads = omp_get_max_threads();
  std::vector<TokenizedFile>& files = summary.files;
  std::map<std::string, std::string> names;  // output name -> input, to catch collisions
  uint64_t total_raw = 0;
  for (const std::string& in : inputs) {
    std::error_code ec;
    Require(fs::is_regular_file(in, ec), "tokenize: input '{}' does not exist or is not a file", in);
    std::string name = TokenFileNameFor(in);
    auto [it, fresh] = names.emplace(name, in);
    Require(fresh, "tokenize: inputs '{}' and '{}' would both write {}; rename one", it->second, in,
            name);
    TokenizedFile f;
    f.input = in;
    f.format = IsJsonl(in) ? "jsonl" : "text";
    f.output = (fs::path(options.out_dir) / name).string();
    files.push_back(std::move(f));
    total_raw += fs::file_size(in, ec);
  }
  fs::create_directories(options.out_dir);

  std::vector<OutputFile> outputs(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    outputs[i].writer = std::make_unique<AtomicFileWriter>(files[i].output);
  }
  Progress progress(options.progress, total_raw);
  uint64_t raw_done = 0;
  std::vector<uint16_t> buf16;

  // Parses and encodes a batch in parallel, then appends it to the outputs in document order.
  auto flush = [&](std::vector<Doc>& docs) {
    const int64_t n = static_cast<int64_t>(docs.size());
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t i = 0; i < n; ++i) {
      Doc& d = docs[i];
      try {
        if (d.json) {
          nlohmann::json j = nlohmann::json::parse(d.raw);
          Require(j.is_object(), "expected a JSON object");
          auto it = j.find("text");
          Require(it != j.end(), "missing field \"text\"");
          Require(it->is_string(), "field \"text\" is not a string");
          d.text = std::move(it->get_ref<std::string&>());
        } else {
          d.text = std::move(d.raw);
          RequireValidUtf8(d.text, "text");
        }
      } catch (const nlohmann::json::exception& e) {
        d.error = "tokenize: " + JsonErrorMessage(Where(files, d), d.raw, e);
      } catch (const std::exception& e) {
        d.error = fmt::format("tokenize: {}: {}", Where(files, d), e.what());
      }
      std::string().swap(d.raw);
    }
    for (const Doc& d : docs) {
      if (!d.error.empty()) Fail("{}", d.error);
    }
    std::vector<std::string_view> texts;
    texts.reserve(docs.size());
    for (const Doc& d : docs) texts.emplace_back(d.text);
    std::vector<std::vector<uint32_t>> ids = EncodeBatch(
        tokenizer, texts, options.chunk_bytes,
        [&](size_t i) { return fmt::format("tokenize: {}", Where(files, docs[i])); });
    // Serial, in document order: the only place outputs are written.
    for (size_t i = 0; i < docs.size(); ++i) {
      const Doc& d = docs[i];
      TokenizedFile& f = files[d.file];
      if (d.text.empty()) {
        ++f.skipped_empty;
        continue;
      }
      std::vector<uint32_t>& out = ids[i];
      out.push_back(*eos);
      const void* bytes = out.data();
      size_t size = out.size() * 4;
      if (u16) {
        buf16.assign(out.begin(), out.end());  // ids < 65536 (checked against the vocabulary)
        bytes = buf16.data();
        size = buf16.size() * 2;
      }
      outputs[d.file].writer->Write(bytes, size);
      outputs[d.file].sha.Update(bytes, size);
      f.tokens += out.size();
      f.output_bytes += size;
      f.text_bytes += d.text.size();
      ++f.documents;
      summary.tokens += out.size();
      summary.text_bytes += d.text.size();
      ++summary.documents;
      std::vector<uint32_t>().swap(out);
    }
    docs.clear();
  };

  std::vector<Doc> batch;
  size_t batch_bytes = 0;
  for (uint32_t fi = 0; fi < files.size(); ++fi) {
    TokenizedFile& f = files[fi];
    TextReader reader(f.input);
    f.compression = std::string(CompressionName(reader.compression()));
    if (f.format == "jsonl") {
      std::string line;
      uint64_t line_no = 0;
      while (reader.ReadLine(&line)) {
        ++line_no;
        if (IsBlank(line)) continue;
        batch_bytes += line.size();
        batch.push_back(Doc{fi, line_no, true, std::move(line), {}, {}});
        line.clear();
        if (batch_bytes >= options.batch_bytes) {
          flush(batch);
          batch_bytes = 0;
          progress.Update(raw_done + reader.raw_bytes_read(), summary.text_bytes,
                          summary.documents, summary.tokens);
        }
      }
    } else {
      std::string text = reader.ReadAll();
      batch_bytes += text.size();
      batch.push_back(Doc{fi, 0, false, std::move(text), {}, {}});
    }
    f.input_sha256 = reader.RawSha256Hex();
    f.input_bytes = reader.raw_bytes_read();
    raw_done += f.input_bytes;
    summary.input_bytes += f.input_bytes;
    if (batch_bytes >= options.batch_bytes || fi + 1 == files.size()) {
      flush(batch);
      batch_bytes = 0;
    }
    progress.Update(raw_done, summary.text_bytes, summary.documents, summary.tokens);
  }
  progress.Finish();

  nlohmann::json manifest;
  manifest["format"] = "replica-tokenized-v1";
  manifest["tokenizer"] = {{"name", tokenizer.name()},
                           {"source", fs::path(tokenizer.info().source_path).filename().string()},
                           {"source_sha256", tokenizer.info().source_sha256},
                           {"vocab_size", tokenizer.vocab_size()},
                           {"eos_id", *eos}};
  if (tokenizer.pad_id()) manifest["tokenizer"]["pad_id"] = *tokenizer.pad_id();
  manifest["dtype"] = dtype;
  manifest["eos_after_each_document"] = true;
  manifest["inputs"] = nlohmann::json::array();
  manifest["outputs"] = nlohmann::json::array();
  for (size_t i = 0; i < files.size(); ++i) {
    TokenizedFile& f = files[i];
    f.output_sha256 = outputs[i].sha.HexDigest();
    manifest["inputs"].push_back({{"path", f.input},
                                  {"sha256", f.input_sha256},
                                  {"bytes", f.input_bytes},
                                  {"compression", f.compression},
                                  {"format", f.format},
                                  {"documents", f.documents},
                                  {"skipped_empty", f.skipped_empty},
                                  {"text_bytes", f.text_bytes}});
    manifest["outputs"].push_back({{"path", fs::path(f.output).filename().string()},
                                   {"input", f.input},
                                   {"sha256", f.output_sha256},
                                   {"bytes", f.output_bytes},
                                   {"tokens", f.tokens},
                                   {"documents", f.documents}});
    summary.skipped_empty += f.skipped_empty;
  }
  manifest["totals"] = {{"documents", summary.documents},
                        {"skipped_empty", summary.skipped_empty},
                        {"tokens", summary.tokens},
                        {"text_bytes", summary.text_bytes}};
  // Outputs become visible only now that every input has been read and encoded.
  for (OutputFile& o : outputs) o.writer->Commit();
  summary.manifest_path = (fs::path(options.out_dir) / "manifest.json").string();
  WriteFileAtomic(summary.manifest_path, manifest.dump(2) + "\n");
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  summary.cpu_seconds = ProcessCpuSeconds() - cpu0;
  return summary;
}

}  // namespace replica
