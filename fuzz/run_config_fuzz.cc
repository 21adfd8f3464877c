// Fuzzes the YAML run config: RunConfig::FromYaml on arbitrary text, then its canonical form and
// hashes. Inputs may carry `--set` overrides after a line "#--set" (one per line), so the override
// parser is fuzzed too.
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "run/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (const size_t cut = text.find("#--set\n"); cut != std::string::npos) {
    std::string rest = text.substr(cut + 7);
    text.resize(cut);
    size_t pos = 0;
    while (pos < rest.size()) {
      size_t nl = rest.find('\n', pos);
      if (nl == std::string::npos) nl = rest.size();
      overrides.push_back(rest.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  try {
    const replica::RunConfig c =
        replica::RunConfig::FromYaml(text, "/nonexistent-fuzz-base", overrides, "fuzz.yaml");
    (void)c.Canonical();
    (void)c.TrajectoryHash();
  } catch (const replica::Error&) {
  }
  return 0;
}
