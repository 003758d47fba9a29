// Plain log lines to stderr: "[zerolayer] I message". Level from
// ZEROLAYER_LOG_LEVEL (debug|info|warn|error, default info).
#pragma once

#include <cstdint>

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

// A line that a client can make repeat many times a second (one that keeps
// rewriting a shared header, clients dying in a burst): at most one a
// period, saying how many were left out since the last. One thread only.
class LogLimiter {
 public:
  explicit LogLimiter(uint64_t period_ns = 1'000'000'000) : period_ns_(period_ns) {}
  // True when a line may be written at now_ns; then *left_out is how many
  // were not since the last one written.
  bool allow(uint64_t now_ns, int64_t* left_out) {
    if (written_ && now_ns - last_ns_ < period_ns_) {
      ++left_out_;
      return false;
    }
    written_ = true;
    last_ns_ = now_ns;
    *left_out = left_out_;
    left_out_ = 0;
    return true;
  }

 private:
  const uint64_t period_ns_;
  bool written_ = false;
  uint64_t last_ns_ = 0;
  int64_t left_out_ = 0;
};

}  // namespace zl
