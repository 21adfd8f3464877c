// Command-line mistakes in one style: `replica: error: COMMAND: what is wrong; see 'replica
// COMMAND --help'`. Replaces CLI11's own wording where it misleads: an unknown subcommand (CLI11:
// "A subcommand is required"), an unknown option hidden behind a missing required one, extra
// arguments listed in reverse. Unknown subcommands and options get the nearest known name ("did
// you mean"); an unknown option that spells a run-config key gets the `--set` that sets it.
#pragma once
#include <CLI/CLI.hpp>

#include <string>

namespace replica::cli {

// The message (without the "replica: error: " prefix) for a parse failure of `app` on argv.
std::string DescribeParseError(CLI::App& app, const CLI::ParseError& e, int argc,
                               const char* const* argv);

}  // namespace replica::cli
