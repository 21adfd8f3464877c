#include "data/loader.h"

#include "core/error.h"

namespace replica::data {
namespace {

template <typename T>
T Field(const nlohmann::json& j, const char* name) {
  Require(j.is_object(), "data loader state: expected a JSON object");
  auto it = j.find(name);
  Require(it != j.end(), "data loader state: missing field '{}'", name);
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    Fail("data loader state: field '{}' has the wrong type ({})", name, it->type_name());
  }
}

}  // namespace

nlohmann::json LoaderState::ToJson() const {
  return {{"version", 1},
          {"dataset_type", "fsl"},
          {"seed", seed},
          {"epoch", epoch},
          {"batches_processed", batches_processed},
          {"tokens_processed", batches_processed * global_batch_instances *
                                   static_cast<uint64_t>(seq_len)},
          {"global_batch_instances", global_batch_instances},
          {"sequence_length", seq_len},
          {"num_instances", num_instances},
          {"dataset_fingerprint", dataset_fingerprint}};
}

LoaderState LoaderState::FromJson(const nlohmann::json& j) {
  int version = Field<int>(j, "version");
  Require(version == 1, "data loader state: version {} not supported (expected 1)", version);
  LoaderState s;
  s.seed = Field<uint64_t>(j, "seed");
  s.epoch = Field<uint64_t>(j, "epoch");
  s.batches_processed = Field<uint64_t>(j, "batches_processed");
  s.global_batch_instances = Field<uint64_t>(j, "global_batch_instances");
  s.seq_len = Field<int64_t>(j, "sequence_length");
  s.num_instances = Field<uint64_t>(j, "num_instances");
  s.dataset_fingerprint = Field<std::string>(j, "dataset_fingerprint");
  return s;
}

int64_t RankBatch::num_micro_batches() const {
  if (micro_batch_instances <= 0) return 0;
  return static_cast<int64_t>(instances.size()) / micro_batch_instances;
}

MicroBatch RankBatch::micro_batch(int64_t k) const {
  Require(k >= 0 && k < num_micro_batches(), "micro-batch {} out of range; the rank batch has {}",
          k, num_micro_batches());
  int64_t row = k * micro_batch_instances;
  return {instances.data() + row, input_ids.data() + row * seq_len,
          labels.data() + row * seq_len, micro_batch_instances, seq_len};
}

DataLoader::DataLoader(std::shared_ptr<const InstanceDataset> dataset,
                       const LoaderOptions& options)
    : dataset_(std::move(dataset)), options_(options), epoch_(options.start_epoch) {
  Require(dataset_ != nullptr, "data loader: no dataset");
  uint64_t I = options.global_batch_instances;
  Require(I > 0, "data loader: global batch must be at least 1 instance");
  Require(options.world > 0 && I % options.world == 0,
          "data loader: world size {} must divide the global batch of {} instances",
          options.world, I);
  Require(options.start_epoch >= 1, "data loader: start {}", EpochMessage(options.start_epoch));
  Require(options.rank < options.world, "data loader: rank {} out of range for world size {}",
          options.rank, options.world);
  uint64_t local = I / options.world;
  if (options_.micro_batch_instances == 0) options_.micro_batch_instances = local;
  Require(local % options_.micro_batch_instances == 0,
          "data loader: micro-batch of {} instances must divide the rank batch of {} (global "
          "batch {} / world {})",
          options_.micro_batch_instances, local, I, options.world);
  batches_per_epoch_ = dataset_->num_instances() / I;
  Require(batches_per_epoch_ > 0,
          "data loader: the dataset has {} instances, fewer than one global batch of {}",
          dataset_->num_instances(), I);
}

const GlobalOrder& DataLoader::Order() {
  if (!order_ || order_->epoch() != epoch_)
    order_ = std::make_unique<GlobalOrder>(dataset_->num_instances(), options_.seed, epoch_,
                                           options_.global_batch_instances);
  return *order_;
}

std::vector<uint32_t> DataLoader::PeekGlobalBatch() {
  auto row = Order().Batch(batches_processed_);
  return {row.begin(), row.end()};
}

RankBatch DataLoader::Next() {
  RankBatch out;
  out.epoch = epoch_;
  out.batch = batches_processed_;
  out.instances = Order().RankBatch(batches_processed_, options_.rank, options_.world);
  out.seq_len = dataset_->seq_len();
  out.micro_batch_instances = static_cast<int64_t>(options_.micro_batch_instances);
  int64_t rows = static_cast<int64_t>(out.instances.size()), T = out.seq_len;
  out.input_ids.resize(static_cast<size_t>(rows * T));
  out.labels.resize(out.input_ids.size());
  // One instance per iteration: each row is written by exactly one thread.
  // An exception must not leave an OpenMP region, so the first failing row's message is kept.
  const InstanceDataset& ds = *dataset_;
  const bool masked = ds.has_label_mask();
  std::vector<uint8_t> mask(masked ? out.input_ids.size() : 0);
  std::vector<std::string> errors(static_cast<size_t>(rows));
#pragma omp parallel for schedule(static) if (rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    try {
      ds.ReadInstance(out.instances[r], out.input_ids.data() + r * T);
      if (masked) ds.ReadLabelMask(out.instances[r], mask.data() + r * T);
    } catch (const std::exception& e) {
      errors[r] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw Error(e);
  MakeLabels(out.input_ids.data(), rows, T, out.labels.data(), masked ? mask.data() : nullptr);
  if (const auto boundary = ds.document_boundary()) {
    Require(rows * T <= INT32_MAX, "data loader: {} rows of {} tokens overflow int32 cu_doc_lens",
            rows, T);
    out.cu_doc_lens.push_back(0);
    for (int64_t r = 0; r < rows; ++r)
      for (int32_t len : DocumentLengths(out.input_ids.data() + r * T, T, *boundary))
        out.cu_doc_lens.push_back(out.cu_doc_lens.back() + len);
  }
  if (++batches_processed_ == batches_per_epoch_) {
    ++epoch_;
    batches_processed_ = 0;
  }
  return out;
}

LoaderState DataLoader::state() const {
  LoaderState s;
  s.seed = options_.seed;
  s.epoch = epoch_;
  s.batches_processed = batches_processed_;
  s.global_batch_instances = options_.global_batch_instances;
  s.seq_len = dataset_->seq_len();
  s.num_instances = dataset_->num_instances();
  s.dataset_fingerprint = dataset_->fingerprint();
  return s;
}

void DataLoader::Restore(const LoaderState& s) {
  Require(s.dataset_fingerprint == dataset_->fingerprint(),
          "data loader state: dataset fingerprint mismatch: the checkpoint was written for {}, "
          "this dataset is {}",
          s.dataset_fingerprint, dataset_->fingerprint());
  Require(s.global_batch_instances == options_.global_batch_instances,
          "data loader state: global batch of {} instances in the checkpoint, {} configured; the "
          "global batch must stay fixed to resume the same data order",
          s.global_batch_instances, options_.global_batch_instances);
  Require(s.seq_len == dataset_->seq_len(),
          "data loader state: sequence length {} in the checkpoint, {} configured", s.seq_len,
          dataset_->seq_len());
  Require(s.num_instances == dataset_->num_instances(),
          "data loader state: {} instances in the checkpoint, {} in the dataset", s.num_instances,
          dataset_->num_instances());
  Require(s.epoch >= 1, "data loader state: {}", EpochMessage(s.epoch));
  Require(s.batches_processed < batches_per_epoch_,
          "data loader state: batches_processed {} out of range; an epoch has {} global batches",
          s.batches_processed, batches_per_epoch_);
  // As in OLMo-core, the checkpoint's seed wins over the configured one.
  options_.seed = s.seed;
  epoch_ = s.epoch;
  batches_processed_ = s.batches_processed;
  order_.reset();
}

}  // namespace replica::data
