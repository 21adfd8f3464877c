// Range checks for command-line numbers that say the range in words ("must be at least 1 (got
// 0)"), where CLI11's PositiveNumber / NonNegativeNumber print the limits of a double.
#pragma once
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

namespace replica::cli {

namespace detail {
// The number spelled by `s` (the whole of it), or NaN.
inline double ParseNumber(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return s.empty() || *end != '\0' ? std::nan("") : v;
}
}  // namespace detail

// An integer >= min. `note`, when given, follows the message ("; OLMo-core's loader says ...").
inline CLI::Validator AtLeast(long long min, std::string note = "") {
  return CLI::Validator(
      [min, note](std::string& s) -> std::string {
        const double v = detail::ParseNumber(s);
        if (std::isnan(v)) return fmt::format("expected an integer, got '{}'", s);
        if (v < static_cast<double>(min))
          return fmt::format("must be at least {} (got {}){}", min, s, note);
        return "";
      },
      fmt::format("INT >= {}", min));
}

// A number > 0 (fractions allowed).
inline CLI::Validator Positive() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const double v = detail::ParseNumber(s);
        if (std::isnan(v)) return fmt::format("expected a number, got '{}'", s);
        if (!(v > 0)) return fmt::format("must be greater than 0 (got {})", s);
        return "";
      },
      "NUMBER > 0");
}

// A number >= 0 (fractions allowed).
inline CLI::Validator NonNegative() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        const double v = detail::ParseNumber(s);
        if (std::isnan(v)) return fmt::format("expected a number, got '{}'", s);
        if (!(v >= 0)) return fmt::format("must be 0 or more (got {})", s);
        return "";
      },
      "NUMBER >= 0");
}

// An integer in [lo, hi].
inline CLI::Validator Between(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        const double v = detail::ParseNumber(s);
        if (std::isnan(v)) return fmt::format("expected an integer, got '{}'", s);
        if (v < static_cast<double>(lo) || v > static_cast<double>(hi))
          return fmt::format("must be between {} and {} (got {})", lo, hi, s);
        return "";
      },
      fmt::format("INT in [{}, {}]", lo, hi));
}

// An integer that int64 holds (CLI11 would clamp a larger one to 2^63 - 1 without a word). Put it
// before AtLeast / Between, which read the number as a double.
inline CLI::Validator Int64() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        errno = 0;
        char* end = nullptr;
        (void)std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0') return fmt::format("expected an integer, got '{}'", s);
        if (errno == ERANGE)
          return fmt::format("must be between -9223372036854775808 and 9223372036854775807 "
                             "(got {})", s);
        return "";
      },
      "INT64");
}

}  // namespace replica::cli
