// Subcommand registry. Each src/cli/<name>.cc registers one subcommand with a static
// CommandRegistration; main() builds the CLI11 app from the registry. A command's setup function
// adds its options to the given CLI11 subcommand and returns the function that runs it, which
// returns the exit code (0 ok, 1 a check failed); replica::Error thrown from it means exit 2.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace replica::cli {

using RunFn = std::function<int()>;
using SetupFn = std::function<RunFn(CLI::App&)>;

struct CommandSpec {
  std::string name, description;
  SetupFn setup;
};

std::vector<CommandSpec>& Registry();

struct CommandRegistration {
  CommandRegistration(std::string name, std::string description, SetupFn setup) {
    Registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace replica::cli
