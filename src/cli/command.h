// Subcommand registry. Each src/cli/<name>.cc registers one subcommand with a static
// CommandRegistration; main() builds the CLI11 app from the registry. A command's setup function
// adds its options to the given CLI11 subcommand and returns the function that runs it, which
// returns the exit code (0 ok, 1 a check failed); replica::Error thrown from it means exit 2.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
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

// A validator for unsigned 64-bit options: plain decimal digits whose value fits in uint64.
// CLI11's own conversion saturates (2^64 and above read as 2^64 - 1, -1 as 2^64 - 1) and reads
// "010" as octal; this refuses the first two with the value in the message and reads the third
// as decimal. Use it with Option::transform (it rewrites the text to plain decimal).
inline CLI::Validator DecimalUint64() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const std::string why = "must be a decimal integer from 0 to 18446744073709551615, got '" +
                                s + "'";
        if (s.empty() || s.size() > 20 || s.find_first_not_of("0123456789") != std::string::npos)
          return why;
        unsigned __int128 v = 0;
        for (char c : s) v = v * 10 + static_cast<unsigned>(c - '0');
        if (v > UINT64_MAX) return why;
        s = std::to_string(static_cast<uint64_t>(v));  // no leading zeros: never read as octal
        return {};
      },
      "UINT64");
}

struct CommandRegistration {
  CommandRegistration(std::string name, std::string description, SetupFn setup) {
    Registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

}  // namespace replica::cli
