#include "cli/data_packed.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/data_order.h"

namespace replica::cli {

int RunPackedBatch(const PackedBatchRequest& q) {
  const data::PackedDataset ds(q.dataset);
  const uint64_t N = ds.num_instances(), I = q.global_batch_instances;
  Require(I > 0, "packed batch: no global batch size");
  const uint64_t per_epoch = N / I;
  Require(per_epoch > 0, "packed batch: the dataset packs into {} instances, fewer than one "
          "global batch of {}", N, I);
  const uint64_t epoch = 1 + q.global_batch / per_epoch, row = q.global_batch % per_epoch;
  const data::GlobalOrder order(N, q.seed, epoch, I);
  const auto ids_of_row = order.Batch(row);
  const int64_t T = ds.seq_len();
  const auto boundary = data::DocumentBoundary{q.dataset.eos_token_id, q.dataset.bos_token_id};
  std::vector<uint64_t> sizes;
  for (const auto& f : ds.files()) sizes.push_back(f.size_bytes());

  nlohmann::json inst = nlohmann::json::array();
  std::vector<int32_t> ids(static_cast<size_t>(T));
  uint64_t padding_total = 0;
  for (size_t i = 0; i < ids_of_row.size(); ++i) {
    const uint32_t k = ids_of_row[i];
    ds.ReadInstance(k, ids.data());
    const uint64_t used = ds.InstanceTokens(k);
    padding_total += static_cast<uint64_t>(T) - used;
    nlohmann::json docs = nlohmann::json::array();
    for (const auto& p : ds.InstancePieces(k))
      docs.push_back({{"file", p.file}, {"path", q.dataset.paths[p.file]},
                      {"token_offset", p.offset}, {"length", p.length}});
    const size_t head = static_cast<size_t>(std::min<uint64_t>(q.head_tokens, T));
    std::vector<int32_t> shown(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(head));
    nlohmann::json e = {{"position", i},
                        {"instance", k},
                        {"documents", docs},
                        {"doc_lens", data::DocumentLengths(ids.data(), T, boundary)},
                        {"tokens_in_documents", used},
                        {"padding", static_cast<uint64_t>(T) - used},
                        {"tokens", shown}};
    if (q.decode) e["text"] = q.decode(shown);
    inst.push_back(std::move(e));
  }
  const std::string fp = data::OlmoCorePackedFingerprint(q.dataset, sizes);
  nlohmann::json out = {
      {"global_batch", q.global_batch},
      {"step", q.global_batch + 1},
      {"epoch", epoch},
      {"batch_in_epoch", row},
      {"batches_per_epoch", per_epoch},
      {"num_instances", N},
      {"global_batch_instances", I},
      {"sequence_length", T},
      {"seed", q.seed},
      {"packing",
       {{"long_doc_strategy", data::LongDocStrategyName(q.dataset.long_doc_strategy)},
        {"source_group_size", q.dataset.source_group_size},
        {"generate_doc_lengths", q.dataset.generate_doc_lengths},
        {"documents", ds.num_documents()},
        {"tokens_in_documents", ds.total_tokens()},
        {"padding_fraction",
         1.0 - static_cast<double>(ds.total_tokens()) / static_cast<double>(N * T)}}},
      {"olmo_core_fingerprint", fp},
      {"files", q.dataset.paths.size()},
      {"instances", inst}};
  if (q.json) {
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("global batch %lu (trainer step %lu): epoch %lu, row %lu of %lu; %lu packed "
              "instances of %ld tokens, seed %lu\n",
              (unsigned long)q.global_batch, (unsigned long)(q.global_batch + 1),
              (unsigned long)epoch, (unsigned long)row, (unsigned long)per_epoch,
              (unsigned long)I, (long)T, (unsigned long)q.seed);
  std::printf("dataset: %lu instances packed (OBFD, %s, source_group_size %ld) from %lu documents "
              "in %zu files; padding %.4f of all tokens; OLMo-core fingerprint %s\n",
              (unsigned long)N, std::string(data::LongDocStrategyName(q.dataset.long_doc_strategy)).c_str(),
              (long)q.dataset.source_group_size, (unsigned long)ds.num_documents(),
              q.dataset.paths.size(), out["packing"]["padding_fraction"].get<double>(), fp.c_str());
  std::printf("this batch: %lu padding tokens of %lu\n", (unsigned long)padding_total,
              (unsigned long)(I * static_cast<uint64_t>(T)));
  for (const auto& e : inst) {
    std::printf("%4zu  instance %-10u %zu document(s), padding %lu\n",
                e["position"].get<size_t>(), e["instance"].get<uint32_t>(), e["documents"].size(),
                e["padding"].get<unsigned long>());
    for (const auto& d : e["documents"])
      std::printf("      %s @ token %lu, %lu tokens\n", d["path"].get<std::string>().c_str(),
                  d["token_offset"].get<unsigned long>(), d["length"].get<unsigned long>());
    std::printf("      doc_lens %s\n      tokens %s\n", e["doc_lens"].dump().c_str(),
                e["tokens"].dump().c_str());
    if (e.contains("text")) std::printf("      %s\n", e["text"].get<std::string>().c_str());
  }
  return 0;
}

}  // namespace replica::cli
