// Logging to stderr (stdout is reserved for command output such as --json). Quiet by default in
// tests; `SetLogLevel` raises or lowers it.
#pragma once
#include <fmt/format.h>

#include <cstdio>

namespace replica {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };
LogLevel GetLogLevel();
void SetLogLevel(LogLevel level);

template <typename... Args>
void LogAt(LogLevel level, const char* tag, fmt::format_string<Args...> format, Args&&... args) {
  if (level > GetLogLevel()) return;
  std::string line = fmt::format(format, std::forward<Args>(args)...);
  fmt::print(stderr, "[{}] {}\n", tag, line);
}
#define REPLICA_LOG_INFO(...) ::replica::LogAt(::replica::LogLevel::kInfo, "info", __VA_ARGS__)
#define REPLICA_LOG_WARN(...) ::replica::LogAt(::replica::LogLevel::kWarn, "warn", __VA_ARGS__)
#define REPLICA_LOG_ERROR(...) ::replica::LogAt(::replica::LogLevel::kError, "error", __VA_ARGS__)

}  // namespace replica
