// The training data a run config names: data.paths (token files or globs) read as OLMo-core's
// NumpyFSLDataset, or data.mixture read as a MixtureDataset (data/mixture.h). Both are opened with
// the model's vocabulary as the id bound (data.check_vocab), so a bad id is reported with its file
// and offset before training starts.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/instance_dataset.h"
#include "data/packed_dataset.h"
#include "run/run_config.h"

namespace replica {

// Expands patterns in order, each glob sorted; Error naming a pattern that matches no file.
std::vector<std::string> ExpandDataPaths(const std::vector<std::string>& patterns);
// The expanded files in the order OLMo-core reads them for data.source_permutation_seed
// (random.Random(seed).shuffle of their positions).
// `seed`: a Python integer in decimal (data.source_permutation_seed); Error naming it otherwise.
std::vector<std::string> PermuteSourceFiles(const std::vector<std::string>& files,
                                            const std::string& seed);
// Every token file the run reads, in reading order (data.paths after
// data.source_permutation_seed, or all mixture sources' files), e.g. for the leak guard. Error
// when the config names none.
std::vector<std::string> TrainingFiles(const RunConfig& config);
// The packed dataset of a data.packing: obfd config (data/packed_dataset.h): its files
// (TrainingFiles), sequence length, dtype, the model's EOS, BOS and padding ids, the long-document
// strategy, source groups and generate_doc_lengths. `vocab_size` bounds the token ids.
data::PackedDatasetOptions PackedDatasetOptionsFor(const RunConfig& config, uint64_t vocab_size);
// The EOS and BOS ids (model.eos_token_id, model.bos_token_id) that split instances into documents
// when data.generate_doc_lengths is set; nullopt when it is not. Error when it is set and the model
// has no EOS id.
std::optional<data::DocumentBoundary> DocumentBoundaryFor(const RunConfig& config);
// What the run trains on: plain instances of data.paths (data/fsl_dataset.h), packed ones
// (data.packing: obfd), or a mixture; each with document lengths when data.generate_doc_lengths
// is set.
std::shared_ptr<const data::InstanceDataset> OpenTrainingData(const RunConfig& config);
// "12 file(s)" or "mixture of 3 sources (12 files)", for messages.
std::string DescribeTrainingData(const RunConfig& config);

}  // namespace replica
