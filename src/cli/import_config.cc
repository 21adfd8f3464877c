// replica import-config config.json [--out FILE] [--mix-dir DIR | --mix-file FILE]
//     [--data-paths data_paths.txt] [--path-map PREFIX=DIR ...] [--max-steps N]
//     [--allow-unsupported] [--force]
// replica import-config --field-table
// Writes the replica YAML equivalent of an OLMo-core config.json (run/olmo_core_config.h), with
// the JSON path beside each key. A setting replica cannot reproduce is an error naming its JSON
// path (exit 2, nothing written); with --allow-unsupported it is a warning and the YAML's header
// lists it under "NOT REPRODUCED" (a what-if, as for plan). The YAML is checked by loading it
// before it is written. --out never names the input, and an existing file only with --force.
// --field-table prints the importer's table of OLMo-core classes and fields as JSON
// (run/olmo_core_fields.h).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/command.h"
#include "cli/validators.h"
#include "cli/olmo_core_options.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "run/olmo_core_config.h"
#include "run/olmo_core_fields.h"
#include "run/run_config.h"

namespace replica::cli {
namespace {

struct ImportArgs {
  std::string config, out;
  OlmoCoreImportOptions import;
  bool quiet = false, force = false, field_table = false;
};

int RunImport(const ImportArgs& a) {
  if (a.field_table) {
    std::printf("%s\n", olmo_core::FieldTableJson().dump(2).c_str());
    return 0;
  }
  Require(!a.config.empty(), "CONFIG is required (or --field-table)");
  if (!a.out.empty()) {
    std::error_code ec;
    Require(!std::filesystem::equivalent(a.out, a.config, ec),
            "--out {}: that is the input config {}; write the YAML elsewhere", a.out, a.config);
    Require(a.force || !std::filesystem::exists(a.out),
            "--out {}: the file exists; give --force to replace it", a.out);
  }
  const nlohmann::json j = ReadOlmoCoreConfig(a.config);
  Require(!j.is_null(), "{}: not an OLMo-core config (a JSON object with \"_CLASS_\" keys)",
          a.config);
  const OlmoCoreImport im = ImportOlmoCoreConfig(j, a.config, a.import);
  if (a.import.allow_unsupported) {
    for (const ImportNote& n : im.refused)
      std::fprintf(stderr, "replica: warning: %s: %s: NOT reproduced: %s\n", a.config.c_str(),
                   n.json_path.c_str(), n.reason.c_str());
  } else {
    RequireNoRefusals(im, a.config);
  }
  Require(!im.needs_max_steps,
          "{}: the run stops after a number of epochs but the dataset is not available to count "
          "its batches: map the data (--mix-dir, --data-paths, --path-map) or give --max-steps N",
          a.config);
  // The YAML must load as it is (paths in it are absolute, so its location does not matter).
  (void)RunConfigFromImport(im, a.config, {});
  if (a.out.empty()) {
    std::fputs(im.yaml.c_str(), stdout);
  } else {
    try {
      WriteFileAtomic(a.out, im.yaml);
    } catch (const Error& e) {
      Fail("--out {}", e.what());
    }
  }
  if (!a.quiet) {
    std::fprintf(stderr, "replica: %s: %zu setting(s) ignored (listed in the YAML header)%s\n",
                 a.config.c_str(), im.ignored.size(),
                 a.out.empty() ? "" : (", wrote " + a.out).c_str());
    for (const ImportNote& n : im.unresolved)
      std::fprintf(stderr, "replica: before training: %s: %s\n", n.json_path.c_str(),
                   n.reason.c_str());
  }
  return 0;
}

CommandRegistration reg(
    "import-config",
    "write the replica YAML of an OLMo-core config.json (JSON path beside each key)",
    [](CLI::App& app) -> RunFn {
      auto a = std::make_shared<ImportArgs>();
      app.add_option("CONFIG", a->config, "OLMo-core config.json (ConfigSaverCallback's)");
      app.add_option("--out", a->out,
                     "write the YAML here (atomically) instead of stdout; never the input, and "
                     "an existing file only with --force");
      app.add_flag("--force", a->force, "replace an existing --out file");
      app.add_flag("--field-table", a->field_table,
                   "print the OLMo-core classes and fields the importer knows (mapped, accepted "
                   "with reason, refused with reason) as JSON, and exit");
      AddOlmoCoreOptions(app, a->import);
      app.add_option("--max-steps", a->import.max_steps,
                     "train.max_steps when the config stops after epochs of data not available "
                     "here")
          ->check(AtLeast(1));
      app.add_flag("--allow-unsupported", a->import.allow_unsupported,
                   "write the YAML even when settings cannot be reproduced (listed in its header "
                   "as NOT REPRODUCED, and on stderr)");
      app.add_flag("--quiet", a->quiet, "no summary on stderr");
      return [a] { return RunImport(*a); };
    });

}  // namespace
}  // namespace replica::cli
