// `replica data order`: OLMo-core's global instance order for (N, seed, epoch), its digests and
// one batch split over ranks (docs/design.md §5); `replica data info`: what a list of token files
// holds as a NumpyFSLDataset; `replica data batch N`: the instances of global batch N (file,
// offset, first tokens decoded) from a run config or data_paths.txt, reading only file sizes and
// the instances' first tokens (data/batch_lookup.h). Thin: parsing here, the work in src/data/.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/data_packed.h"
#include "cli/set_option.h"
#include "cli/validators.h"
#include "cli/olmo_core_options.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "data/batch_lookup.h"
#include "data/data_order.h"
#include "data/fsl_dataset.h"
#include "data/numpy_rng.h"
#include "data/python_random.h"
#include "run/olmo_core_config.h"
#include "run/run_config.h"
#include "tokenizer/tokenizer_registry.h"
#include "train/train_data.h"

namespace replica::cli {
namespace {

struct OrderArgs {
  uint64_t instances = 0, seed = 0, epoch = 0, global_batch = 1, world = 1;
  int64_t batch = 0;
  bool json = false;
};

// seed + epoch is a Python integer in OLMo-core; past 2^64 it is printed as a decimal string.
nlohmann::json RngSeedJson(uint64_t seed, uint64_t epoch) {
  if (seed <= UINT64_MAX - epoch) return seed + epoch;
  data::uint128 v = static_cast<data::uint128>(seed) + epoch;
  std::string digits;
  for (; v != 0; v /= 10) digits.insert(digits.begin(), static_cast<char>('0' + int(v % 10)));
  return digits;
}

int RunOrder(const OrderArgs& a) {
  Require(a.epoch >= 1, "--epoch: {}", data::EpochMessage(a.epoch));
  Require(a.global_batch > 0, "--global-batch must be at least 1");
  Require(a.world > 0 && a.global_batch % a.world == 0,
          "--world {} must divide --global-batch {}", a.world, a.global_batch);
  data::GlobalOrder order(a.instances, a.seed, a.epoch, a.global_batch);
  int64_t nb = static_cast<int64_t>(order.num_batches());
  Require(nb > 0, "--global-batch {} is larger than --instances {}: no whole batch",
          a.global_batch, a.instances);
  Require(a.batch >= -nb && a.batch < nb,
          "--batch {} out of range; there are {} global batches (negative counts from the end)",
          a.batch, nb);
  uint64_t b = static_cast<uint64_t>(a.batch < 0 ? a.batch + nb : a.batch);

  auto shuffled = order.shuffled();
  size_t edge = std::min<size_t>(64, shuffled.size());
  std::vector<uint32_t> head(shuffled.begin(), shuffled.begin() + edge);
  std::vector<uint32_t> tail(shuffled.end() - edge, shuffled.end());
  auto row = order.Batch(b);
  nlohmann::json ranks = nlohmann::json::array();
  for (uint64_t r = 0; r < a.world; ++r) ranks.push_back(order.RankBatch(b, r, a.world));

  nlohmann::json out = {
      {"params",
       {{"N", a.instances},
        {"seed", a.seed},
        {"epoch", a.epoch},
        {"instances_per_batch", a.global_batch},
        {"dp_world_size", a.world}}},
      {"rng_seed", RngSeedJson(a.seed, a.epoch)},
      {"num_batches", order.num_batches()},
      {"total_size", order.truncated().size()},
      {"shuffled_sha256", data::OrderSha256(shuffled)},
      {"truncated_sha256", data::OrderSha256(order.truncated())},
      {"head", head},
      {"tail", tail},
      {"batch", b},
      {"global", std::vector<uint32_t>(row.begin(), row.end())},
      {"ranks", ranks}};
  if (a.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("instances %lu, seed %lu + epoch %lu, %lu global batches of %lu\n",
                (unsigned long)a.instances, (unsigned long)a.seed, (unsigned long)a.epoch,
                (unsigned long)order.num_batches(), (unsigned long)a.global_batch);
    std::printf("shuffled_sha256  %s\ntruncated_sha256 %s\n",
                out["shuffled_sha256"].get<std::string>().c_str(),
                out["truncated_sha256"].get<std::string>().c_str());
    std::printf("head %s\ntail %s\n", out["head"].dump().c_str(), out["tail"].dump().c_str());
    for (uint64_t r = 0; r < a.world; ++r)
      std::printf("batch %lu rank %lu: %s\n", (unsigned long)b, (unsigned long)r,
                  ranks[r].dump().c_str());
  }
  return 0;
}

struct InfoArgs {
  std::vector<std::string> files;
  int64_t seq_len = 0;
  std::string dtype = "uint32";
  uint64_t vocab_size = 100278;
  bool json = false;
};

int RunInfo(const InfoArgs& a) {
  data::NumpyFslDataset ds({a.files, a.seq_len, data::ParseDtype(a.dtype), a.vocab_size});
  nlohmann::json files = nlohmann::json::array();
  for (size_t f = 0; f < ds.files().size(); ++f)
    files.push_back({{"path", ds.files()[f].path()},
                     {"tokens", ds.files()[f].num_tokens()},
                     {"instances", ds.first_instance()[f + 1] - ds.first_instance()[f]}});
  nlohmann::json out = {{"num_instances", ds.num_instances()},
                        {"sequence_length", ds.seq_len()},
                        {"dtype", a.dtype},
                        {"vocab_size", a.vocab_size},
                        {"fingerprint", ds.fingerprint()},
                        {"files", files}};
  if (a.json) {
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  const size_t n = ds.files().size();
  std::printf("%llu instance%s of %lld tokens from %zu token file%s (%s, ids below %llu)\n",
              static_cast<unsigned long long>(ds.num_instances()),
              ds.num_instances() == 1 ? "" : "s",
              static_cast<long long>(ds.seq_len()), n, n == 1 ? "" : "s", a.dtype.c_str(),
              static_cast<unsigned long long>(a.vocab_size));
  std::printf("fingerprint %s\n\n%15s %12s  %s\n", ds.fingerprint().c_str(), "tokens", "instances",
              "file");
  for (const auto& f : files)
    std::printf("%15llu %12llu  %s\n", f["tokens"].get<unsigned long long>(),
                f["instances"].get<unsigned long long>(), f["path"].get<std::string>().c_str());
  return 0;
}


struct BatchArgs {
  int64_t batch = -1, step = 0;
  std::string config;
  std::vector<std::string> sets;
  OlmoCoreImportOptions import;
  int64_t seq_len = 0;
  uint64_t seed = 0, global_batch = 0, global_batch_tokens = 0, head_tokens = 16;
  std::string dtype = "uint32", tokenizer = "dolma2";
  std::string source_permutation_seed;  // with --data-paths: the files' order shuffled
  uint64_t vocab_size = 100278;
  int64_t eos_id = 100257, pad_id = 100277, bos_id = -1, max_target_seq_len = -1;
  bool json = false, seed_given = false;
  bool doc_lengths = false;  // with --data-paths: document lengths from --eos-id / --bos-id
};

std::vector<std::string> ReadPathList(const std::string& file) {
  std::vector<std::string> paths;
  const std::string text = ReadFile(file);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    paths.push_back(line.substr(a, line.find_last_not_of(" \t\r") - a + 1));
  }
  Require(!paths.empty(), "{}: no paths", file);
  return paths;
}

// Printable text of token ids: bytes as decoded, control characters escaped.
std::string Printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

int RunPacked(PackedBatchRequest q, const BatchArgs& a, uint64_t global_batch) {
  q.global_batch = global_batch;
  q.head_tokens = a.head_tokens;
  q.json = a.json;
  if (a.tokenizer != "none") {
    const Tokenizer* tok = &SharedTokenizer(a.tokenizer);
    q.decode = [tok](const std::vector<int32_t>& ids) {
      std::string s;
      for (int32_t id : ids)
        s += id >= 0 && static_cast<uint64_t>(id) < tok->vocab_size()
                 ? tok->TokenBytes(static_cast<uint32_t>(id))
                 : fmt::format("<id {}>", id);
      return Printable(s);
    };
  }
  return RunPackedBatch(q);
}

int RunBatch(BatchArgs a) {
  Require((a.batch >= 0) != (a.step > 0),
          "give the global batch N (0-based) or --step S (1-based trainer step), not both");
  const uint64_t b =
      a.step > 0 ? static_cast<uint64_t>(a.step - 1) : static_cast<uint64_t>(a.batch);
  data::BatchLookupOptions o;
  data::OlmoCoreFingerprintFields fp{a.vocab_size, a.pad_id, a.eos_id, a.bos_id,
                                     a.max_target_seq_len};
  Require(!a.doc_lengths || !a.import.data_paths_file.empty(),
          "--doc-lengths goes with --data-paths; a config asks for document lengths itself "
          "(data.generate_doc_lengths, OLMo-core's dataset.generate_doc_lengths)");
  if (!a.config.empty()) {
    Require(a.source_permutation_seed.empty(),
            "--source-permutation-seed goes with --data-paths; a config sets its own "
            "(data.source_permutation_seed, OLMo-core's dataset.source_permutation_seed)");
    const nlohmann::json j = ReadOlmoCoreConfig(a.config);
    if (!j.is_null()) {
      const OlmoCoreImport im = ImportOlmoCoreConfig(j, a.config, a.import);
      std::string why;
      for (const ImportNote& n : im.unresolved)
        why += fmt::format("\n  {}: {}", n.json_path, n.reason);
      Require(!im.data_paths.empty(), "{}: the dataset's token files are not local:{}", a.config,
              why);
      Require(im.global_batch_instances > 0 && im.seq_len > 0,
              "{}: no sequence length or global batch", a.config);
      if (im.packing == "obfd") {
        std::string refused;
        for (const ImportNote& n : im.refused)
          if (n.json_path.rfind("dataset", 0) == 0)
            refused += fmt::format("\n  {}: {}", n.json_path, n.reason);
        Require(refused.empty(), "{}: the packed dataset is refused:{}", a.config, refused);
        PackedBatchRequest q;
        q.dataset.paths = im.source_permutation_seed.empty()
                              ? im.data_paths
                              : PermuteSourceFiles(ExpandDataPaths(im.data_paths),
                                                   im.source_permutation_seed);
        q.dataset.seq_len = im.seq_len;
        q.dataset.dtype = data::ParseDtype(im.dtype);
        q.dataset.vocab_size = im.tokenizer_vocab_size;
        q.dataset.eos_token_id = im.eos_token_id;
        q.dataset.bos_token_id = im.bos_token_id;
        q.dataset.pad_token_id = im.pad_token_id;
        q.dataset.long_doc_strategy =
            data::ParseLongDocStrategy(im.long_doc_strategy, "dataset.long_doc_strategy");
        q.dataset.source_group_size = im.source_group_size;
        q.dataset.generate_doc_lengths = im.generate_doc_lengths;
        q.seed = im.seed;
        q.global_batch_instances = im.global_batch_instances;
        return RunPacked(std::move(q), a, b);
      }
      o.paths = im.source_permutation_seed.empty()
                    ? im.data_paths
                    : PermuteSourceFiles(ExpandDataPaths(im.data_paths), im.source_permutation_seed);
      o.seq_len = im.seq_len;
      o.dtype = data::ParseDtype(im.dtype);
      o.seed = im.seed;
      o.global_batch_instances = im.global_batch_instances;
      if (im.generate_doc_lengths) {
        Require(im.eos_token_id >= 0,
                "{}: dataset.generate_doc_lengths needs dataset.tokenizer.eos_token_id", a.config);
        o.document_boundary = data::DocumentBoundary{im.eos_token_id, im.bos_token_id};
      }
      fp = {im.tokenizer_vocab_size, im.pad_token_id, im.eos_token_id, im.bos_token_id,
            im.max_target_sequence_length};
    } else {
      Require(a.import.data_paths_file.empty(),
              "--data-paths replaces an OLMo-core config's data; a YAML config names its own");

      const RunConfig c = RunConfig::Load(a.config, a.sets);
      Require(c.data.mixture.empty(),
              "{}: data.mixture: batch lookup reads plain data.paths datasets only", a.config);
      if (c.data.packing == "obfd") {
        PackedBatchRequest q;
        q.dataset = PackedDatasetOptionsFor(c, a.vocab_size);
        q.seed = static_cast<uint64_t>(c.data.seed);
        q.global_batch_instances = static_cast<uint64_t>(c.train.global_batch_instances);
        return RunPacked(std::move(q), a, b);
      }
      o.paths = TrainingFiles(c);  // expanded, in data.source_permutation_seed's order
      o.seq_len = c.data.seq_len;
      o.dtype = data::ParseDtype(c.data.dtype);
      o.seed = static_cast<uint64_t>(c.data.seed);
      o.global_batch_instances = static_cast<uint64_t>(c.train.global_batch_instances);
      o.document_boundary = DocumentBoundaryFor(c);
      // The tokenizer's ids are the model's, as the packed dataset takes them.
      fp.pad_token_id = c.model.pad_token_id;
      fp.eos_token_id = c.model.eos_token_id;
      fp.bos_token_id = c.model.bos_token_id;
    }
  } else {
    Require(!a.import.data_paths_file.empty(),
            "give --config (a run config or OLMo-core config.json) or --data-paths FILE with "
            "--seq-len, --seed and --global-batch");
    Require(a.seq_len > 0, "--data-paths needs --seq-len");
    Require(a.seed_given, "--data-paths needs --seed (the data loader's seed; OLMo-core's "
            "data_loader.seed)");
    Require((a.global_batch > 0) != (a.global_batch_tokens > 0),
            "--data-paths needs one of --global-batch (instances) or --global-batch-tokens");
    for (std::string p : ReadPathList(a.import.data_paths_file)) {
      size_t best = 0;
      std::string to;
      for (const std::string& m : a.import.path_map) {
        const size_t eq = m.find('=');
        Require(eq != std::string::npos && eq > 0, "--path-map '{}': expected PREFIX=DIR", m);
        if (p.rfind(m.substr(0, eq), 0) == 0 && eq > best) {
          best = eq;
          to = m.substr(eq + 1);
        }
      }
      o.paths.push_back(best ? to + p.substr(best) : p);
    }
    if (!a.source_permutation_seed.empty()) {
      Require(data::PythonRandomFromText(a.source_permutation_seed).has_value(),
              "--source-permutation-seed: expected an integer (decimal digits, optionally '-', "
              "magnitude below 2^64), got '{}'", a.source_permutation_seed);
      o.paths = PermuteSourceFiles(o.paths, a.source_permutation_seed);
    }
    o.seq_len = a.seq_len;
    o.dtype = data::ParseDtype(a.dtype);
    o.seed = a.seed;
    if (a.global_batch_tokens > 0) {
      Require(a.global_batch_tokens % static_cast<uint64_t>(a.seq_len) == 0,
              "--global-batch-tokens {} is not a whole number of {}-token instances",
              a.global_batch_tokens, a.seq_len);
      o.global_batch_instances = a.global_batch_tokens / static_cast<uint64_t>(a.seq_len);
    } else {
      o.global_batch_instances = a.global_batch;
    }
    if (a.doc_lengths) {
      Require(a.eos_id >= 0, "--doc-lengths needs an --eos-id (documents end at EOS), got {}",
              a.eos_id);
      o.document_boundary = data::DocumentBoundary{a.eos_id, a.bos_id < 0 ? -1 : a.bos_id};
    }
  }
  o.head_tokens = a.head_tokens;
  const data::BatchLookup r = data::LookupGlobalBatch(o, b);
  const std::string fingerprint = data::OlmoCoreFslFingerprint(o.paths, r.file_sizes, o.dtype, fp);
  const Tokenizer* tok = a.tokenizer == "none" ? nullptr : &SharedTokenizer(a.tokenizer);
  auto decode = [&](const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) {
      if (id >= 0 && static_cast<uint64_t>(id) < tok->vocab_size()) {
        s += tok->TokenBytes(static_cast<uint32_t>(id));
      } else {
        s += fmt::format("<id {}>", id);
      }
    }
    return s;
  };
  nlohmann::json inst = nlohmann::json::array();
  for (size_t i = 0; i < r.instances.size(); ++i) {
    const data::BatchInstance& x = r.instances[i];
    nlohmann::json e = {{"position", i},
                        {"instance", x.instance},
                        {"file", x.file},
                        {"path", o.paths[x.file]},
                        {"token_offset", x.token_offset},
                        {"tokens", x.head}};
    if (o.document_boundary) e["doc_lens"] = x.doc_lens;
    if (tok) e["text"] = decode(x.head);
    inst.push_back(std::move(e));
  }
  nlohmann::json out = {{"global_batch", r.global_batch},
                        {"step", r.global_batch + 1},
                        {"epoch", r.epoch},
                        {"batch_in_epoch", r.batch_in_epoch},
                        {"batches_per_epoch", r.batches_per_epoch},
                        {"num_instances", r.num_instances},
                        {"global_batch_instances", o.global_batch_instances},
                        {"sequence_length", o.seq_len},
                        {"seed", o.seed},
                        {"generate_doc_lengths", o.document_boundary.has_value()},
                        {"olmo_core_fingerprint", fingerprint},
                        {"files", o.paths.size()},
                        {"files_opened", std::vector<size_t>(r.files_opened.begin(),
                                                             r.files_opened.end())},
                        {"instances", inst}};
  if (a.json) {
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("global batch %lu (trainer step %lu): epoch %lu, row %lu of %lu; %lu instances of "
              "%ld tokens, seed %lu\n",
              (unsigned long)r.global_batch, (unsigned long)(r.global_batch + 1),
              (unsigned long)r.epoch, (unsigned long)r.batch_in_epoch,
              (unsigned long)r.batches_per_epoch, (unsigned long)o.global_batch_instances,
              (long)o.seq_len, (unsigned long)o.seed);
  std::printf("dataset: %lu instances in %zu files; OLMo-core fingerprint %s\n",
              (unsigned long)r.num_instances, o.paths.size(), fingerprint.c_str());
  if (o.document_boundary)
    std::printf("read: every instance whole (its document lengths: generate_doc_lengths), from "
                "%zu of the %zu files\n",
                r.files_opened.size(), o.paths.size());
  else
    std::printf("read: the first %lu tokens of each instance, from %zu of the %zu files\n",
                (unsigned long)std::min<uint64_t>(o.head_tokens, static_cast<uint64_t>(o.seq_len)),
                r.files_opened.size(), o.paths.size());
  for (size_t i = 0; i < r.instances.size(); ++i) {
    const data::BatchInstance& x = r.instances[i];
    std::printf("%4zu  instance %-10u %s @ token %lu\n", i, x.instance, o.paths[x.file].c_str(),
                (unsigned long)x.token_offset);
    if (o.document_boundary)
      std::printf("      doc_lens %s\n", nlohmann::json(x.doc_lens).dump().c_str());
    if (tok) std::printf("      %s\n", Printable(decode(x.head)).c_str());
  }
  return 0;
}

// --seed S and --global-batch I, the inputs of the loader's global order, as `data order` and
// `data batch` (with --data-paths) take them; `when` prefixes the descriptions. Returns both
// options for the subcommand's own requirements.
std::pair<CLI::Option*, CLI::Option*> AddOrderOptions(CLI::App& cmd, uint64_t& seed,
                                                      uint64_t& global_batch,
                                                      const std::string& when) {
  return {cmd.add_option("--seed", seed, when + "data loader seed S (0 to 2^64 - 1)")
              ->transform(DecimalUint64()),
          cmd.add_option("--global-batch", global_batch, when + "instances per global batch I")
              ->transform(DecimalUint64())};
}

// --seq-len and --dtype, how token files are cut into instances, as `data info` and `data batch`
// (with --data-paths) take them.
std::pair<CLI::Option*, CLI::Option*> AddTokenFileOptions(CLI::App& cmd, int64_t& seq_len,
                                                          std::string& dtype,
                                                          const std::string& when) {
  return {cmd.add_option("--seq-len", seq_len, when + "tokens per instance"),
          cmd.add_option("--dtype", dtype, when + "uint32 (default) or uint16")};
}

CommandRegistration reg(
    "data", "data pipeline: instance order and token-file datasets", [](CLI::App& app) -> RunFn {
      app.require_subcommand(1);
      auto oa = std::make_shared<OrderArgs>();
      CLI::App* order = app.add_subcommand(
          "order", "OLMo-core NumpyFSLDataLoader global instance order for N instances");
      order->add_option("--instances", oa->instances, "number of instances N (1..2^32-2)")
          ->required()
          ->transform(DecimalUint64())
          ->check(AtLeast(0));
      const auto [seed, global_batch] = AddOrderOptions(*order, oa->seed, oa->global_batch, "");
      seed->required()->check(AtLeast(0));
      global_batch->description(global_batch->get_description() + " (default 1)")
          ->check(AtLeast(1));
      order->add_option("--epoch", oa->epoch,
                        "epoch E, counted from 1 as in OLMo-core (the RNG is seeded with S + E)")
          ->required()
          ->transform(DecimalUint64())
          ->check(AtLeast(1, ": epochs count from 1, as OLMo-core's data loader says "
                               "('epoch' must be at least 1)"));
      order->add_option("--world", oa->world, "data-parallel ranks R; must divide I (default 1)")
          ->transform(DecimalUint64())
          ->check(AtLeast(1));
      order->add_option("--batch", oa->batch,
                        "global batch b whose per-rank split is printed (negative: from the end)");
      order->add_flag("--json", oa->json, "print JSON on stdout");

      auto ia = std::make_shared<InfoArgs>();
      CLI::App* info = app.add_subcommand("info", "instances and fingerprint of token files");
      info->add_option("files", ia->files, "token files, in order")->required();
      AddTokenFileOptions(*info, ia->seq_len, ia->dtype, "")
          .first->required()
          ->check(AtLeast(1));
      info->add_option("--vocab-size", ia->vocab_size, "ids must be below it (default 100278)")
          ->check(AtLeast(1));
      info->add_flag("--json", ia->json, "print JSON on stdout");

      auto ba = std::make_shared<BatchArgs>();
      CLI::App* batch = app.add_subcommand(
          "batch", "the instances of global batch N (file, offset, first tokens decoded), "
                   "reading only file sizes and those instances");
      batch->add_option("N", ba->batch, "global batch, 0-based, counted across epochs")
          ->check(Int64())
          ->check(AtLeast(0));
      batch->add_option("--step", ba->step, "trainer step S (1-based): global batch S - 1")
          ->check(Int64())
          ->check(AtLeast(1));
      batch->add_option("--config", ba->config,
                        "a run config (YAML) or an OLMo-core config.json naming the data");
      AddSetOption(*batch, ba->sets, "override a key of a YAML config (repeatable)");
      AddOlmoCoreOptions(*batch, ba->import);
      const std::string with_paths = "with --data-paths: ";
      AddTokenFileOptions(*batch, ba->seq_len, ba->dtype, with_paths);
      AddOrderOptions(*batch, ba->seed, ba->global_batch, with_paths)
          .first->each([ba](const std::string&) { ba->seed_given = true; });
      batch->add_option("--source-permutation-seed", ba->source_permutation_seed,
                        "with --data-paths: read the files in the order Python's "
                        "random.Random(SEED).shuffle gives (OLMo-core's source_permutation_seed)");
      batch->add_option("--global-batch-tokens", ba->global_batch_tokens,
                        "with --data-paths: tokens per global batch (OLMo-core global_batch_size)");
      batch->add_option("--vocab-size", ba->vocab_size,
                        "tokenizer vocab size for the OLMo-core fingerprint (dolma2: 100278)");
      batch->add_option("--eos-id", ba->eos_id,
                        "with --data-paths: for the fingerprint (default 100257; a run config "
                        "gives its model.eos_token_id)");
      batch->add_option("--bos-id", ba->bos_id,
                        "with --data-paths: for the fingerprint and --doc-lengths (default -1: "
                        "none; a run config gives its model.bos_token_id)");
      batch->add_flag("--doc-lengths", ba->doc_lengths,
                      "with --data-paths: each instance's document lengths, split at --eos-id "
                      "(and --bos-id) as OLMo-core's generate_doc_lengths");
      batch->add_option("--pad-id", ba->pad_id,
                        "with --data-paths: for the fingerprint (default 100277; a run config "
                        "gives its model.pad_token_id)");
      batch->add_option("--max-target-seq-len", ba->max_target_seq_len,
                        "for the fingerprint (default: None)");
      batch->add_option("--tokens", ba->head_tokens, "tokens shown per instance (default 16)");
      batch->add_option("--tokenizer", ba->tokenizer,
                        "decode with: dolma2 (default), a tokenizer.json path, or none");
      batch->add_flag("--json", ba->json, "print JSON on stdout");

      return [=]() -> int {
        if (order->parsed()) return RunOrder(*oa);
        if (batch->parsed()) return RunBatch(*ba);
        return RunInfo(*ia);
      };
    });

}  // namespace
}  // namespace replica::cli
