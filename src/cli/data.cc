// `replica data order`: OLMo-core's global instance order for (N, seed, epoch), its digests and
// one batch split over ranks (docs/design.md §5); `replica data info`: what a list of token files
// holds as a NumpyFSLDataset. Thin: parsing here, the work in src/data/.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "data/data_order.h"
#include "data/fsl_dataset.h"
#include "data/numpy_rng.h"

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

CommandRegistration reg(
    "data", "data pipeline: instance order and token-file datasets", [](CLI::App& app) -> RunFn {
      app.require_subcommand(1);
      auto oa = std::make_shared<OrderArgs>();
      CLI::App* order = app.add_subcommand(
          "order", "OLMo-core NumpyFSLDataLoader global instance order for N instances");
      order->add_option("--instances", oa->instances, "number of instances N (1..2^32-2)")
          ->required()
          ->check(CLI::NonNegativeNumber);
      order->add_option("--seed", oa->seed, "data seed S")
          ->required()
          ->check(CLI::NonNegativeNumber);
      order->add_option("--epoch", oa->epoch,
                        "epoch E, counted from 1 as in OLMo-core (the RNG is seeded with S + E)")
          ->required()
          ->check(CLI::PositiveNumber);
      order->add_option("--global-batch", oa->global_batch,
                        "instances per global batch I (default 1)")
          ->check(CLI::PositiveNumber);
      order->add_option("--world", oa->world, "data-parallel ranks R; must divide I (default 1)")
          ->check(CLI::PositiveNumber);
      order->add_option("--batch", oa->batch,
                        "global batch b whose per-rank split is printed (negative: from the end)");
      order->add_flag("--json", oa->json, "print JSON on stdout");

      auto ia = std::make_shared<InfoArgs>();
      CLI::App* info = app.add_subcommand("info", "instances and fingerprint of token files");
      info->add_option("files", ia->files, "token files, in order")->required();
      info->add_option("--seq-len", ia->seq_len, "sequence length")
          ->required()
          ->check(CLI::PositiveNumber);
      info->add_option("--dtype", ia->dtype, "uint32 (default) or uint16");
      info->add_option("--vocab-size", ia->vocab_size, "ids must be below it (default 100278)")
          ->check(CLI::PositiveNumber);
      info->add_flag("--json", ia->json, "print JSON on stdout");

      return [=]() -> int {
        if (order->parsed()) return RunOrder(*oa);
        return RunInfo(*ia);
      };
    });

}  // namespace
}  // namespace replica::cli
