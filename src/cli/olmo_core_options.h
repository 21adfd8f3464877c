// The command-line options that say where an OLMo-core config's data and checkpoints are on this
// machine (run/olmo_core_config.h), shared by train, plan, import-config and data batch.
#pragma once
#include <CLI/CLI.hpp>

#include "run/olmo_core_config.h"

namespace replica::cli {

inline void AddOlmoCoreOptions(CLI::App& app, OlmoCoreImportOptions& o) {
  app.add_option("--mix-dir", o.mix_dir,
                 "OLMo-core config.json: directory of mix files <mix>.txt (OLMo-core's "
                 "src/olmo_core/data/mixes)");
  app.add_option("--mix-file", o.mix_file,
                 "OLMo-core config.json: the mix file to read, whatever dataset.mix names");
  app.add_option("--data-paths", o.data_paths_file,
                 "OLMo-core config.json: data_paths.txt, the run's token files in order (replaces "
                 "the dataset's mix or paths)");
  app.add_option("--path-map", o.path_map,
                 "OLMo-core config.json: PREFIX=DIR, rewrite paths starting with PREFIX (e.g. "
                 "s3://ai2-llm=/data/ai2-llm); repeatable, longest prefix wins");
}

}  // namespace replica::cli
