// The training data a run config names: data.paths (token files or globs) read as OLMo-core's
// NumpyFSLDataset, or data.mixture read as a MixtureDataset (data/mixture.h). Both are opened with
// the model's vocabulary as the id bound (data.check_vocab), so a bad id is reported with its file
// and offset before training starts.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/instance_dataset.h"
#include "run/run_config.h"

namespace replica {

// Expands patterns in order, each glob sorted; Error naming a pattern that matches no file.
std::vector<std::string> ExpandDataPaths(const std::vector<std::string>& patterns);
// Every token file the run reads (data.paths, or all mixture sources' files), e.g. for the leak
// guard. Error when the config names none.
std::vector<std::string> TrainingFiles(const RunConfig& config);
std::shared_ptr<const data::InstanceDataset> OpenTrainingData(const RunConfig& config);
// "12 file(s)" or "mixture of 3 sources (12 files)", for messages.
std::string DescribeTrainingData(const RunConfig& config);

}  // namespace replica
