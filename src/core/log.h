// Plain log lines to stderr: "[zerolayer] I message". Level from
// ZEROLAYER_LOG_LEVEL (debug|info|warn|error, default info).
#pragma once

#include "zerolayer/status.h"

namespace zl {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

void log_message(LogLevel level, const std::string& message);
bool log_enabled(LogLevel level);

template <typename... Args>
void log_info(const Args&... args) {
  if (log_enabled(LogLevel::kInfo)) log_message(LogLevel::kInfo, str_cat(args...));
}
template <typename... Args>
void log_warn(const Args&... args) {
  if (log_enabled(LogLevel::kWarn)) log_message(LogLevel::kWarn, str_cat(args...));
}
template <typename... Args>
void log_debug(const Args&... args) {
  if (log_enabled(LogLevel::kDebug)) log_message(LogLevel::kDebug, str_cat(args...));
}

}  // namespace zl
