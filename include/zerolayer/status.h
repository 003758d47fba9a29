// Status and StatusOr<T>: how anything the environment can cause (a missing
// file, a corrupt header, bad JSON, a value out of range) travels back to the
// caller. Bugs are not Statuses: they abort (inside the engine, CHECK).
//
//   StatusOr<Config> c = parse_config(path);
//   if (!c.ok()) return c.status();      // or ZL_ASSIGN_OR_RETURN(auto cfg, ...)
//   use(*c);
//
// Messages are complete sentences for the user: they name the file, the field
// or tensor, and what is wrong. Callers add context with Status::with_prefix.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace zl {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is wrong (flags, request fields)
  kNotFound,           // a file or name does not exist
  kDataLoss,           // a file is malformed, truncated or lies about itself
  kUnimplemented,      // valid, but not supported (architecture, dtype)
  kOutOfRange,         // e.g. a prompt longer than the context
  kResourceExhausted,  // out of memory or KV space
  kUnavailable,        // a server could not be reached, or a transfer broke off (may succeed if retried)
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<prefix>: <message>"; ok stays ok.
  Status with_prefix(std::string_view prefix) const;
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status ok_status() { return Status(); }

// str_cat("tensor ", name, " has ", n, " dims") without std::format (GCC 12).
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

template <typename... Args>
Status invalid_argument(const Args&... args) {
  return Status(StatusCode::kInvalidArgument, str_cat(args...));
}
template <typename... Args>
Status not_found(const Args&... args) {
  return Status(StatusCode::kNotFound, str_cat(args...));
}
template <typename... Args>
Status data_loss(const Args&... args) {
  return Status(StatusCode::kDataLoss, str_cat(args...));
}
template <typename... Args>
Status unimplemented(const Args&... args) {
  return Status(StatusCode::kUnimplemented, str_cat(args...));
}
template <typename... Args>
Status out_of_range(const Args&... args) {
  return Status(StatusCode::kOutOfRange, str_cat(args...));
}
template <typename... Args>
Status resource_exhausted(const Args&... args) {
  return Status(StatusCode::kResourceExhausted, str_cat(args...));
}
template <typename... Args>
Status unavailable(const Args&... args) {
  return Status(StatusCode::kUnavailable, str_cat(args...));
}
template <typename... Args>
Status internal_error(const Args&... args) {
  return Status(StatusCode::kInternal, str_cat(args...));
}

namespace detail {
// A StatusOr used wrongly (a bug in the caller): print and abort.
[[noreturn]] void status_or_from_ok();
[[noreturn]] void status_or_bad_access(const Status& status);
}  // namespace detail

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(value_).ok()) detail::status_or_from_ok();
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }

  T& value() & { return checked(); }
  const T& value() const& { return const_cast<StatusOr*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &value(); }

 private:
  T& checked() {
    if (!ok()) detail::status_or_bad_access(std::get<Status>(value_));
    return std::get<T>(value_);
  }
  std::variant<Status, T> value_;
};

}  // namespace zl

#define ZL_STATUS_CONCAT_INNER(a, b) a##b
#define ZL_STATUS_CONCAT(a, b) ZL_STATUS_CONCAT_INNER(a, b)

#define ZL_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::zl::Status zl_status_ = (expr);         \
    if (!zl_status_.ok()) return zl_status_;  \
  } while (0)

#define ZL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(*tmp)

// ZL_ASSIGN_OR_RETURN(auto x, make_x()); returns the error from the caller.
#define ZL_ASSIGN_OR_RETURN(lhs, expr) \
  ZL_ASSIGN_OR_RETURN_IMPL(ZL_STATUS_CONCAT(zl_statusor_, __LINE__), lhs, expr)
