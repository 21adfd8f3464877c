// The resolved run config as a few lines that `replica train` prints (and records in train.log)
// before the first step, so a run says what it will do: the model's shape, the data (files or the
// mixture's sources with their weights and tokens), the optimizer and the LR schedule (warm-up,
// peak, final, and the LR at a few steps). The batch shape, threads, precision and ISA have their
// own lines in the trainer. Pure: the same config and data give the same lines.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/instance_dataset.h"
#include "run/run_config.h"

namespace replica {

// "model: ...", "data: ...", "optim: ...", "schedule: ..." (one line each).
// `batches_per_epoch` is the loader's whole global batches in one pass over `dataset`.
std::vector<std::string> ResolvedConfigLines(const RunConfig& config,
                                             const data::InstanceDataset& dataset,
                                             uint64_t batches_per_epoch);

// The steps whose LR the schedule line shows: 1, the end of warm-up, halfway from there to
// max_steps, and max_steps (distinct, ascending, within 1..max_steps).
std::vector<int64_t> ScheduleProbeSteps(const RunConfig& config);

}  // namespace replica
