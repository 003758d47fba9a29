#include "tokenizer/unicode_util.h"

#include <array>

namespace zl::unicode {

size_t decode_utf8(std::string_view s, size_t pos, char32_t* cp) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (pos + len > s.size()) return 0;
  char32_t value = b0 & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) {
    const uint8_t b = byte(pos + i);
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
    value = (value << 6) | (b & 0x3F);
  }
  *cp = value;
  return len;
}

size_t char_len(std::string_view s, size_t pos) {
  char32_t cp;
  const size_t len = decode_utf8(s, pos, &cp);
  return len == 0 ? 1 : len;
}

void append_utf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Length of the longest prefix at `pos` that could still start a valid
// sequence (the "maximal subpart"); at least 1.
static size_t maximal_subpart(std::string_view s, size_t pos) {
  const uint8_t b0 = static_cast<uint8_t>(s[pos]);
  size_t len = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 1;
  }
  size_t i = 1;
  for (; i < len && pos + i < s.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(s[pos + i]);
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
  }
  return i;
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    char32_t cp;
    const size_t len = decode_utf8(bytes, pos, &cp);
    if (len > 0) {
      out.append(bytes.substr(pos, len));
      pos += len;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += maximal_subpart(bytes, pos);
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    char32_t cp;
    const size_t len = decode_utf8(bytes, pos, &cp);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

bool is_whitespace(char32_t cp) {
  if (cp >= 0x09 && cp <= 0x0D) return true;
  if (cp < 0x80) return cp == 0x20;
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

namespace {

struct ByteMap {
  std::array<std::string, 256> to_char;
  std::array<int16_t, 324> to_byte;  // code points 0..323 cover the map
  ByteMap() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      append_utf8(cp, &to_char[b]);
      to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

const std::string& byte_to_char_utf8(uint8_t byte) { return byte_map().to_char[byte]; }

bool char_to_byte(char32_t cp, uint8_t* byte) {
  if (cp >= byte_map().to_byte.size() || byte_map().to_byte[cp] < 0) return false;
  *byte = static_cast<uint8_t>(byte_map().to_byte[cp]);
  return true;
}

}  // namespace zl::unicode
