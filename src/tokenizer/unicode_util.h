// UTF-8 helpers for the tokenizers: decoding code points, repairing invalid
// UTF-8 the way Rust's String::from_utf8_lossy does (one U+FFFD per maximal
// ill-formed subpart), Rust's char::is_whitespace, GPT-2's byte<->char map,
// and Unicode NFC (through utf8proc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zl::unicode {

// Decodes the code point at s[pos] if it is well-formed UTF-8; returns its
// length in bytes, or 0 when the bytes there are ill-formed or truncated.
size_t decode_utf8(std::string_view s, size_t pos, char32_t* cp);
// Length of the character starting at s[pos] (1 for ill-formed bytes).
size_t char_len(std::string_view s, size_t pos);
void append_utf8(char32_t cp, std::string* out);
// Replaces ill-formed sequences with U+FFFD as Rust's from_utf8_lossy.
std::string to_valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

// Rust char::is_whitespace (Unicode White_Space).
bool is_whitespace(char32_t cp);

// GPT-2 byte-level map: every byte maps to a printable character.
const std::string& byte_to_char_utf8(uint8_t byte);
// Reverse map; false when `cp` is not one of the 256 characters.
bool char_to_byte(char32_t cp, uint8_t* byte);

// Unicode canonical composition (NFC).
std::string nfc(std::string_view text);

}  // namespace zl::unicode
