// The --set option of the commands that read a run config (train, plan, data batch).
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace replica::cli {

// --set KEY=VALUE, one pair per --set (repeatable), so a positional argument after it stays
// positional: `train --set k=v CONFIG` and `train CONFIG --set k=v` mean the same.
inline CLI::Option* AddSetOption(CLI::App& app, std::vector<std::string>& sets,
                                 const std::string& help) {
  return app.add_option("--set", sets, help)->allow_extra_args(false)->type_name("KEY=VALUE");
}

}  // namespace replica::cli
