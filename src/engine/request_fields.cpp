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

Status check_token_id(const char* field, int64_t id, size_t position, int64_t vocab_size) {
  if (id >= 0 && id < vocab_size) return ok_status();
  return invalid_argument(field, ": token id ", id, " at position ", position, " is out of range [0, ", vocab_size, ")");
}

Status check_token_ids(const char* field, std::span<const int32_t> ids, int64_t vocab_size) {
  for (size_t i = 0; i < ids.size(); ++i) ZL_RETURN_IF_ERROR(check_token_id(field, ids[i], i, vocab_size));
  return ok_status();
}

Status check_text_bytes(const char* field, std::string_view text, uint32_t max_bytes) {
  if (text.size() <= max_bytes) return ok_status();
  return invalid_argument(field, " is longer than ", max_bytes, " bytes (", text.size(), ")");
}

}  // namespace zl
