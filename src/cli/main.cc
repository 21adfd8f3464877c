// replica: one binary, one subcommand per file in src/cli/ (docs/design.md §5).
// Exit codes: 0 success, 1 a check failed, 2 bad input or usage.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/command.h"
#include "cli/parse_error.h"
#include "core/error.h"

namespace replica::cli {
std::vector<CommandSpec>& Registry() {
  static std::vector<CommandSpec> registry;
  return registry;
}
}  // namespace replica::cli

namespace {

// What a command printed must have reached stdout: a full disk or a closed pipe behind `> FILE`
// would otherwise leave a cut output and exit 0. A failed write makes the exit status 2.
int FinishStdout(int rc) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int e = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return rc;
  std::fprintf(stderr, "replica: error: writing to standard output failed%s%s: the output is "
               "incomplete\n", e != 0 ? ": " : "", e != 0 ? std::strerror(e) : "");
  return rc == 0 ? 2 : rc;
}

}  // namespace

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
      if (sub->parsed()) return FinishStdout(run());
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
