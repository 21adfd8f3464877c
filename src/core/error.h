// The one error type of replica (docs/design.md §2.7). Its message names the file, field or argument and
// what was expected; main() prints it and exits 2. Checks that *fail* (parity above a threshold,
// compare finding a difference) are not errors: commands return exit code 1 for those.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace replica {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Throws Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Throws Error(message) unless `condition` holds. For input validation, not internal invariants.
template <typename... Args>
void Require(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace replica
