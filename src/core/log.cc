#include "core/log.h"

#include <atomic>

namespace replica {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
}
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
}  // namespace replica
