// tokenizers' decoders (decoders/*.rs), applied as a chain over token strings.
#include <cstdlib>

#include "tokenizer/hf_tokenizer_impl.h"
#include "tokenizer/unicode_util.h"

namespace zl {
namespace {

// decoders::byte_level: each token back to bytes (a token with a character
// outside the byte map keeps its UTF-8 bytes), then one lossy UTF-8 string.
std::vector<std::string> decode_byte_level(const std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& token : tokens) {
    std::string token_bytes;
    bool mapped = true;
    for (size_t pos = 0; pos < token.size() && mapped;) {
      char32_t cp;
      const size_t len = unicode::decode_utf8(token, pos, &cp);
      uint8_t byte;
      mapped = len > 0 && unicode::char_to_byte(cp, &byte);
      if (mapped) token_bytes.push_back(static_cast<char>(byte));
      pos += len == 0 ? 1 : len;
    }
    bytes += mapped ? token_bytes : token;
  }
  return {unicode::to_valid_utf8(bytes)};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// decoders::byte_fallback: runs of <0xNN> become their bytes when those are
// valid UTF-8, else one U+FFFD per byte.
std::vector<std::string> decode_byte_fallback(const std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string pending;
  const auto flush = [&] {
    if (pending.empty()) return;
    if (unicode::is_valid_utf8(pending)) {
      out.push_back(pending);
    } else {
      for (size_t i = 0; i < pending.size(); ++i) out.push_back("\xEF\xBF\xBD");
    }
    pending.clear();
  };
  for (const std::string& token : tokens) {
    const bool is_byte = token.size() == 6 && token.compare(0, 3, "<0x") == 0 && token[5] == '>' &&
                         hex_value(token[3]) >= 0 && hex_value(token[4]) >= 0;
    if (is_byte) {
      pending.push_back(static_cast<char>(hex_value(token[3]) * 16 + hex_value(token[4])));
    } else {
      flush();
      out.push_back(token);
    }
  }
  flush();
  return out;
}

std::string replace_all(const std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = text.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(text, pos, hit - pos);
    out += to;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

std::string strip_token(const std::string& token, const DecoderStep& step) {
  const std::string& c = step.strip_char;
  size_t begin = 0, end = token.size();
  for (size_t i = 0; i < step.start && !c.empty() && token.compare(begin, c.size(), c) == 0; ++i) {
    begin += c.size();
  }
  for (size_t i = 0; i < step.stop && !c.empty() && end >= begin + c.size() &&
                     token.compare(end - c.size(), c.size(), c) == 0;
       ++i) {
    end -= c.size();
  }
  return token.substr(begin, end - begin);
}

}  // namespace

std::string run_decoders(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens) {
  for (const DecoderStep& step : steps) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel:
        tokens = decode_byte_level(tokens);
        break;
      case DecoderStep::Kind::kByteFallback:
        tokens = decode_byte_fallback(tokens);
        break;
      case DecoderStep::Kind::kReplace:
        for (std::string& token : tokens) token = replace_all(token, step.from, step.to);
        break;
      case DecoderStep::Kind::kFuse: {
        std::string fused;
        for (const std::string& token : tokens) fused += token;
        tokens = {std::move(fused)};
        break;
      }
      case DecoderStep::Kind::kStrip:
        for (std::string& token : tokens) token = strip_token(token, step);
        break;
      case DecoderStep::Kind::kMetaspace:
        // The first token loses its replacement characters (the prepended
        // space); elsewhere they become spaces.
        for (size_t i = 0; i < tokens.size(); ++i) {
          tokens[i] = replace_all(tokens[i], step.from, i == 0 && step.prepend ? "" : " ");
        }
        break;
    }
  }
  std::string text;
  for (const std::string& token : tokens) text += token;
  return text;
}

}  // namespace zl
