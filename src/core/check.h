// CHECK(cond) << "message": aborts with file:line when a programmer's
// invariant is broken. Never used for input the environment controls; those
// return Status (zerolayer/status.h).
#pragma once

#include <sstream>

namespace zl::detail {

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};

// Lets `CHECK(x) << ...` be a void expression in both branches of ?:.
struct Voidify {
  void operator&(const CheckFailure&) {}
};

}  // namespace zl::detail

#define CHECK(cond)                          \
  (cond) ? (void)0                           \
         : ::zl::detail::Voidify() &         \
               ::zl::detail::CheckFailure(__FILE__, __LINE__, #cond)

#define CHECK_EQ(a, b) CHECK((a) == (b)) << #a " = " << (a) << ", " #b " = " << (b) << ". "
#define CHECK_LT(a, b) CHECK((a) < (b)) << #a " = " << (a) << ", " #b " = " << (b) << ". "
#define CHECK_LE(a, b) CHECK((a) <= (b)) << #a " = " << (a) << ", " #b " = " << (b) << ". "
