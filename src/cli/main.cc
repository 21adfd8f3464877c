// replica: one binary, one subcommand per file in src/cli/ (docs/design.md §5).
// Exit codes: 0 success, 1 a check failed, 2 bad input or usage.
#include <algorithm>
#include <cstdio>

#include "cli/command.h"
#include "cli/parse_error.h"
#include "core/error.h"

namespace replica::cli {
std::vector<CommandSpec>& Registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}
}  // namespace replica::cli

int main(int argc, char** argv) {
  using namespace replica::cli;
  CLI::App app{"replica: train Olmo 3 models in C++ and prove they match the reference"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "replica " REPLICA_VERSION);
  auto& registry = Registry();
  std::sort(registry.begin(), registry.end(),
            [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, RunFn>> commands;
  try {
    for (auto& spec : registry) {
      CLI::App* sub = app.add_subcommand(spec.name, spec.description);
      commands.emplace_back(sub, spec.setup(*sub));
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
      std::fprintf(stderr, "replica: error: %s\n", DescribeParseError(app, e, argc, argv).c_str());
      return 2;
    }
    for (auto& [sub, run] : commands) {
      if (sub->parsed()) return run();
    }
    return 2;
  } catch (const replica::Error& e) {
    std::fprintf(stderr, "replica: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replica: error: %s\n", e.what());
    return 2;
  }
}
