#include "zerolayer/status.h"

#include <cstdio>
#include <cstdlib>

#include "core/check.h"

namespace zl {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kDataLoss: return "malformed data";
    case StatusCode::kUnimplemented: return "unsupported";
    case StatusCode::kOutOfRange: return "out of range";
    case StatusCode::kResourceExhausted: return "resource exhausted";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status Status::with_prefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, str_cat(prefix, ": ", message_));
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return str_cat(status_code_name(code_), ": ", message_);
}

namespace detail {

CheckFailure::CheckFailure(const char* file, int line, const char* condition) {
  stream_ << file << ":" << line << ": CHECK failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", stream_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

void status_or_from_ok() { CHECK(false) << "StatusOr built from an ok Status"; __builtin_unreachable(); }

void status_or_bad_access(const Status& status) {
  CHECK(false) << "value() on an error: " << status.to_string();
  __builtin_unreachable();
}

}  // namespace detail

}  // namespace zl
