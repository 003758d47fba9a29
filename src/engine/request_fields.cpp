#include "zerolayer/request_fields.h"

#include <algorithm>
#include <cmath>

namespace zl {

Status check_field(const RequestField& f, double value, int64_t context, FieldName as) {
  const double hi = f.within_context && context > 0 ? std::min(f.hi, double(context)) : f.hi;
  const bool above_lo = f.lo_open ? value > f.lo : value >= f.lo;
  if (above_lo && value <= hi && (!f.integer || value == std::floor(value))) return ok_status();
  const char* name = as == FieldName::kRecord && f.record_name ? f.record_name : f.name;
  const char* open = f.lo_open ? "(" : "[";
  const char* why = hi < f.hi ? " (the context)" : "";
  // Integer bounds print whole (the stream would write 2147483647 as 2.14748e+09).
  if (f.integer)
    return invalid_argument(name, " must be an integer in ", open, static_cast<int64_t>(f.lo), ", ",
                            static_cast<int64_t>(hi), "]", why, ", got ", value);
  return invalid_argument(name, " must be in ", open, f.lo, ", ", hi, "]", why, ", got ", value);
}

}  // namespace zl
