// Small UTF-8 helpers shared by the tokenizers and the stream decoder.
//
// Decoders return valid UTF-8: invalid bytes become U+FFFD the way Rust's
// String::from_utf8_lossy (used by HF tokenizers' ByteLevel decoder) does it,
// one replacement per maximal ill-formed subpart (Unicode 6.3 ch. 3 practice).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace zl {

inline constexpr std::string_view kUtf8Replacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence starting at s[pos], or 0 when the
// bytes there are not (or not yet) a complete, valid sequence.
size_t utf8_valid_len(std::string_view s, size_t pos);

// `s` with every maximal ill-formed subpart replaced by U+FFFD.
std::string utf8_sanitize(std::string_view s);

// Length of the longest prefix of `s` that does not end inside a truncated
// (but so far valid) multi-byte sequence: bytes after it may still be
// completed by later input.
size_t utf8_complete_prefix_len(std::string_view s);

}  // namespace zl
