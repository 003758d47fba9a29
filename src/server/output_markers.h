// Markup in model outputs that both the reasoning splitter
// (server/reasoning.h) and the tool-call parsers (server/tool_calls.h) read:
// gpt-oss's harmony messages, Command R7B's response markers, and the test
// for a marker cut off by the end of a streamed piece.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace zl::server {

// harmony: [<|start|>]header<|message|>body, ended by <|end|>, <|call|> (a
// tool call) or <|return|> (the last message).
inline constexpr std::string_view kHarmonyStart = "<|start|>";
inline constexpr std::string_view kHarmonyMessage = "<|message|>";
inline constexpr std::string_view kHarmonyEnd = "<|end|>", kHarmonyCall = "<|call|>", kHarmonyReturn = "<|return|>";

// Command R7B's text is written between these; they are not text.
inline constexpr std::string_view kResponseBegin = "<|START_RESPONSE|>", kResponseEnd = "<|END_RESPONSE|>";

// The recipient in a harmony message's header ("assistant to=functions.f<|channel|>commentary json"
// or "<|channel|>commentary to=functions.f <|constrain|>json"): "functions.f", or empty (no tool call).
inline std::string_view harmony_recipient(std::string_view header) {
  const size_t to = header.find("to=");
  if (to == std::string_view::npos) return {};
  const std::string_view rest = header.substr(to + 3);
  return rest.substr(0, std::min(rest.find_first_of(" \t\n<"), rest.size()));
}

// The longest suffix of `text` that is a proper prefix of `marker`: bytes
// that may be the marker's start, cut by a token boundary.
inline size_t partial_marker_at_end(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (marker.starts_with(text.substr(text.size() - n))) return n;
  return 0;
}

}  // namespace zl::server
