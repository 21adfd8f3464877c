#include "core/byte_size.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/error.h"

namespace replica {

uint64_t ParseByteSize(const std::string& text, const std::string& where) {
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},          {"b", 1},           {"kib", 1024.0},        {"mib", 1048576.0},
      {"gib", 1073741824.0}, {"tib", 1099511627776.0}, {"kb", 1e3}, {"mb", 1e6},
      {"gb", 1e9},      {"tb", 1e12}};
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const size_t number_begin = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  const std::string number = text.substr(number_begin, i - number_begin);
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit;
  for (; i < text.size(); ++i) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  double scale = 0;
  for (const auto& [name, s] : kUnits)
    if (unit == name) scale = s;
  Require(!number.empty() && end && *end == '\0' && scale > 0,
          "{}: '{}' is not a byte count (a number with an optional unit: B, KiB, MiB, GiB, TiB, "
          "kB, MB, GB, TB; e.g. 24GiB)",
          where, text);
  const double bytes = value * scale;
  Require(bytes < 9.2e18, "{}: '{}' is too large", where, text);
  Require(bytes == std::floor(bytes), "{}: '{}' is not a whole number of bytes", where, text);
  return static_cast<uint64_t>(bytes);
}

std::string FormatBytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1073741824.0) return fmt::format("{:.2f} GiB", b / 1073741824.0);
  return fmt::format("{:.1f} MiB", b / 1048576.0);
}

uint64_t PhysicalMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  Require(pages > 0 && page > 0, "cannot read this machine's physical memory (sysconf)");
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace replica
