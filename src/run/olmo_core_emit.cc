// Writing the imported config as replica YAML: the notes in the header, then each key in its
// nested section with the JSON path it came from as a comment. Nothing is decided here.
#include "core/error.h"
#include "run/olmo_core_import.h"

namespace replica::olmo_core {

std::string RenderYaml(const std::vector<Line>& lines, const OlmoCoreImport& im,
                       const std::string& source) {
  std::string yaml;
  yaml += fmt::format("# replica run config imported from the OLMo-core config {}\n", source);
  yaml +=
      "# (`replica import-config`; docs/olmo-core.md). Beside each key: the JSON path it came "
      "from.\n";
  auto notes = [&](const char* title, const std::vector<ImportNote>& list) {
    if (list.empty()) return;
    yaml += fmt::format("#\n# {}:\n", title);
    for (const ImportNote& n : list) yaml += fmt::format("#   {}: {}\n", n.json_path, n.reason);
  };
  notes("Ignored (no effect on replica's training math)", im.ignored);
  notes("Needed before training", im.unresolved);
  notes("NOT REPRODUCED (refused; replica would train something else)", im.refused);
  std::vector<std::string> open;
  for (const Line& l : lines) {
    std::vector<std::string> parts;
    std::string k = l.key;
    for (size_t pos; (pos = k.find('.')) != std::string::npos; k = k.substr(pos + 1))
      parts.push_back(k.substr(0, pos));
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    open.resize(common);
    for (size_t i = common; i < parts.size(); ++i) {
      yaml += std::string(2 * i, ' ') + parts[i] + ":\n";
      open.push_back(parts[i]);
    }
    std::string text = std::string(2 * parts.size(), ' ') + k + ": " + l.value;
    if (!l.from.empty()) {
      if (text.size() < 44) text += std::string(44 - text.size(), ' ');
      text += "  # " + l.from;
    }
    yaml += text + "\n";
  }
  return yaml;
}

}  // namespace replica::olmo_core
