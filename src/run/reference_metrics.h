// A reference run's curve read into a MetricsLog with replica's metric names, so `replica compare`
// and `replica plot` put it beside a replica run (docs/metrics.md, "Reference runs"). Formats:
//
//   OLMo-core console log   the trainer's stdout/log file: ConsoleLoggerCallback's blocks
//                           "[step=N/M,epoch=E,...]" followed by "    name=value" lines
//                           (values as olmo_core.utils.format_float writes them: 4 significant
//                           digits, "1,234", "1.234B", "2.50E-05", "nan"); a step logged twice (a
//                           restart) keeps the later block.
//   OLMo-core metrics JSON  MetricSaverCallback's metrics_step<N>.json (one object of metrics,
//                           the step in the file name): one file, or a directory of them.
//   W&B CSV export          a header with "Step" or "_step" and one column per metric; a chart
//                           export's "<run> - <metric>" columns are read as <metric> (one run per
//                           file), its "__MIN"/"__MAX" columns and other "_"-columns are skipped;
//                           an empty cell is a missing value.
//   JSONL of step and loss  one object per line with "step" (or "_step") and metrics, under
//                           replica's names or OLMo-core's.
//
// Names (all formats): train/CE loss -> ce_loss, train/Z loss -> z_loss, optim/total grad norm ->
// grad_norm, optim/LR (group 0) -> lr, optim/step skipped -> skipped, throughput/total tokens ->
// tokens; other names are kept as they are. When a step has ce_loss and no loss, loss is
// ce_loss + z_loss (z_loss taken as 0 when absent: OLMo-core records no Z loss with z-loss off).
#pragma once
#include <optional>
#include <string>

#include "run/metrics_reader.h"

namespace replica {

// replica's name for an OLMo-core / W&B metric name, or the name unchanged.
std::string ReplicaMetricName(const std::string& name);

// Applies the name mapping and the derived `loss` to every step of `log`.
void MapReferenceNames(MetricsLog& log);

// Reads `path` when it is one of the reference formats above (sniffed from the content and the
// name); nullopt when it is not (a replica metrics.jsonl, read by ReadMetrics). Error naming
// file:line for a malformed file of a recognised format, or one with no step.
std::optional<MetricsLog> ReadReferenceMetrics(const std::string& path);

}  // namespace replica
