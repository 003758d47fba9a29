#include "core/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace zl {
namespace {

LogLevel level_from_env() {
  const char* env = std::getenv("ZEROLAYER_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kInfo;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kInfo;
}

}  // namespace

bool log_enabled(LogLevel level) {
  static const LogLevel threshold = level_from_env();
  return level >= threshold;
}

void log_message(LogLevel level, const std::string& message) {
  static const char kTags[] = {'D', 'I', 'W', 'E'};
  std::fprintf(stderr, "[zerolayer] %c %s\n", kTags[static_cast<int>(level)], message.c_str());
}

}  // namespace zl
