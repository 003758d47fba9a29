#include "zerolayer/request_fields.h"

#include <cmath>

namespace zl {

Status check_field(const RequestField& f, double value) {
  const bool above_lo = f.lo_open ? value > f.lo : value >= f.lo;
  if (above_lo && value <= f.hi && (!f.integer || value == std::floor(value))) return ok_status();
  const char* open = f.lo_open ? "(" : "[";
  // Integer bounds print whole (the stream would write 2147483647 as 2.14748e+09).
  if (f.integer)
    return invalid_argument(f.name, " must be an integer in ", open, static_cast<int64_t>(f.lo), ", ",
                            static_cast<int64_t>(f.hi), "], got ", value);
  return invalid_argument(f.name, " must be in ", open, f.lo, ", ", f.hi, "], got ", value);
}

}  // namespace zl
