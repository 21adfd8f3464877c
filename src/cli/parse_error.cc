#include "cli/parse_error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "core/suggest.h"
#include "run/run_config.h"

namespace replica::cli {
namespace {

bool LooksLikeNumber(const std::string& s) {
  if (s.size() < 2 || s[0] != '-') return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

bool IsOptionToken(const std::string& s) { return s.size() > 1 && s[0] == '-' && !LooksLikeNumber(s); }

std::vector<CLI::App*> Subcommands(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

std::vector<std::string> SubcommandNames(CLI::App* app) {
  std::vector<std::string> names;
  for (CLI::App* s : Subcommands(app)) names.push_back(s->get_name());
  return names;
}

std::vector<std::string> OptionNames(CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options()) {
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// What argv says, walked the way CLI11 reads it: the subcommand chain, and the first word that is
// neither a known subcommand where one is required nor a known option.
struct Walk {
  CLI::App* cmd = nullptr;
  std::string words;                   // "data batch"
  std::optional<std::string> unknown_command, unknown_option;
  bool missing_command = false;        // cmd requires a subcommand and none was named
};

Walk WalkArgs(CLI::App& app, int argc, const char* const* argv) {
  Walk w;
  w.cmd = &app;
  bool positional_seen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok == "--") break;
    if (IsOptionToken(tok)) {
      const std::string name = tok.substr(0, tok.find('='));
      CLI::Option* opt = w.cmd->get_option_no_throw(name);
      if (!opt && tok.rfind("--", 0) != 0 && tok.size() > 2) {
        opt = w.cmd->get_option_no_throw(tok.substr(0, 2));  // -j4: a short option with its value
        if (opt) continue;
      }
      if (!opt) {
        if (!w.unknown_option) w.unknown_option = name;
        continue;
      }
      if (opt->get_items_expected_max() > 0 && tok.find('=') == std::string::npos) ++i;
      continue;
    }
    if (!positional_seen) {
      CLI::App* sub = nullptr;
      for (CLI::App* s : Subcommands(w.cmd))
        if (s->check_name(tok)) sub = s;
      if (sub) {
        w.words += (w.words.empty() ? "" : " ") + sub->get_name();
        w.cmd = sub;
        continue;
      }
      if (w.cmd->get_require_subcommand_min() > 0) {
        w.unknown_command = tok;
        return w;
      }
    }
    positional_seen = true;
  }
  w.missing_command = !w.unknown_command && w.cmd->get_require_subcommand_min() > 0;
  return w;
}

// "--max-steps" -> the run-config keys whose last part is max_steps ("train.max_steps").
std::vector<std::string> ConfigKeysFor(const std::string& option) {
  std::string last = option.substr(option.find_first_not_of('-'));
  std::replace(last.begin(), last.end(), '-', '_');
  std::vector<std::string> keys;
  for (const ConfigKeyInfo& k : ConfigKeys()) {
    const size_t dot = k.key.rfind('.');
    if (k.key.substr(dot == std::string::npos ? 0 : dot + 1) == last) keys.push_back(k.key);
  }
  return keys;
}

std::string Lower1(std::string s) {
  // CLI11 starts some messages in upper case ("Could not convert"); ours start in lower case.
  if (s.size() > 1 && std::isupper(static_cast<unsigned char>(s[0])) &&
      std::islower(static_cast<unsigned char>(s[1])))
    s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

}  // namespace

std::string DescribeParseError(CLI::App& app, const CLI::ParseError& e, int argc,
                               const char* const* argv) {
  const Walk w = WalkArgs(app, argc, argv);
  const std::string where = w.words.empty() ? "" : w.words + ": ";
  const std::string help = w.words.empty() ? "replica --help" : "replica " + w.words + " --help";
  if (w.unknown_command) {
    const auto near = ClosestMatch(*w.unknown_command, SubcommandNames(w.cmd));
    return fmt::format("{}unknown command '{}'{}; '{}' lists the commands", where,
                       *w.unknown_command,
                       near ? fmt::format(" (did you mean '{}'?)", *near) : "", help);
  }
  if (w.unknown_option) {
    const std::string& name = *w.unknown_option;
    std::vector<std::string> hints;
    if (const auto near = ClosestMatch(name, OptionNames(w.cmd)))
      hints.push_back(fmt::format("did you mean '{}'?", *near));
    if (w.cmd->get_option_no_throw("--set") && name.rfind("--", 0) == 0) {
      std::vector<std::string> sets;
      for (const std::string& key : ConfigKeysFor(name)) sets.push_back("--set " + key + "=VALUE");
      if (!sets.empty()) hints.push_back(fmt::format("a run config key: {}", fmt::join(sets, " or ")));
    }
    const std::string hint = hints.empty() ? "" : fmt::format(" ({})", fmt::join(hints, " "));
    return fmt::format("{}unknown option '{}'{}; see '{}'", where, name, hint, help);
  }
  if (w.missing_command) {
    return fmt::format("{}give a command: {}; see '{}'", where,
                       fmt::join(SubcommandNames(w.cmd), ", "), help);
  }
  std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    // CLI11 lists the extras last-first; they are named here in the order given.
    std::vector<std::string> extras = w.cmd->remaining();
    if (extras.empty()) extras = app.remaining(true);
    std::vector<std::string> quoted;
    for (const std::string& x : extras) quoted.push_back("'" + x + "'");
    if (!quoted.empty())
      what = fmt::format("unexpected argument{} {}", quoted.size() > 1 ? "s" : "",
                         fmt::join(quoted, " "));
  } else if (dynamic_cast<const CLI::RequiredError*>(&e)) {
    // "--run-dir is required": say what the option is for.
    const std::string suffix = " is required";
    if (what.size() > suffix.size() &&
        what.compare(what.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string name = what.substr(0, what.size() - suffix.size());
      if (const CLI::Option* opt = w.cmd->get_option_no_throw(name);
          opt && !opt->get_description().empty())
        what += fmt::format(" ({})", opt->get_description());
    }
  }
  return fmt::format("{}{}; see '{}'", where, Lower1(what), help);
}

}  // namespace replica::cli
