#include "tokenizer/utf8_text.h"

#include <cstdint>

namespace zl {
namespace {

// How many bytes a lead byte announces, and the range allowed for the second
// byte (tighter than 80..BF for E0, ED, F0, F4: no overlongs, surrogates or
// code points above U+10FFFF). Returns 0 for bytes that cannot start a char.
size_t lead_info(uint8_t b, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0) *lo = 0xA0;
    if (b == 0xED) *hi = 0x9F;
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F;
    return 4;
  }
  return 0;
}

// Number of bytes from `pos` that match a valid sequence so far (at least 1
// for the lead byte itself when it is a valid lead), and the announced length.
size_t match_prefix(std::string_view s, size_t pos, size_t* need) {
  uint8_t lo, hi;
  *need = lead_info(static_cast<uint8_t>(s[pos]), &lo, &hi);
  if (*need == 0) return 0;
  size_t matched = 1;
  while (matched < *need && pos + matched < s.size()) {
    uint8_t c = static_cast<uint8_t>(s[pos + matched]);
    if (c < lo || c > hi) break;
    lo = 0x80;
    hi = 0xBF;
    ++matched;
  }
  return matched;
}

}  // namespace

size_t utf8_valid_len(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  size_t need;
  size_t matched = match_prefix(s, pos, &need);
  return (need != 0 && matched == need) ? need : 0;
}

std::string utf8_sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    size_t need;
    size_t matched = match_prefix(s, pos, &need);
    if (need != 0 && matched == need) {
      out.append(s.substr(pos, need));
      pos += need;
    } else {
      // The maximal subpart (lead byte plus matching continuations) becomes one U+FFFD.
      out.append(kUtf8Replacement);
      pos += matched == 0 ? 1 : matched;
    }
  }
  return out;
}

size_t utf8_complete_prefix_len(std::string_view s) {
  // A truncated sequence is at most 3 bytes long, so look back at most 3 bytes
  // for a lead byte whose valid prefix runs to the end of the string.
  size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    size_t pos = n - back;
    size_t need;
    size_t matched = match_prefix(s, pos, &need);
    if (need > 1 && matched == back && matched < need) return pos;
    if (static_cast<uint8_t>(s[pos]) < 0x80 || need > 1) break;  // a lead byte decides it
  }
  return n;
}

}  // namespace zl
