#include "server/reasoning.h"

#include <algorithm>

#include "server/output_markers.h"

namespace zl::server {
namespace {

constexpr std::string_view kBlank = " \t\r\n";

struct Tags {
  std::string_view open, close;
};
constexpr Tags kThinkTags{"<think>", "</think>"};
constexpr Tags kCommandRTags{"<|START_THINKING|>", "<|END_THINKING|>"};
constexpr std::string_view kHarmonyAnalysis = "<|channel|>analysis";

const Tags& tags_of(ReasoningFormat format) { return format == ReasoningFormat::kCommandR ? kCommandRTags : kThinkTags; }

}  // namespace

std::optional<ReasoningFormat> reasoning_format_named(std::string_view name) {
  if (name == "deepseek_r1" || name == "qwen3") return ReasoningFormat::kThink;
  if (name == "command_r7b") return ReasoningFormat::kCommandR;
  if (name == "openai_gptoss") return ReasoningFormat::kHarmony;
  return std::nullopt;
}

std::string reasoning_format_names() { return "deepseek_r1, qwen3, command_r7b, openai_gptoss"; }

const char* reasoning_format_description(ReasoningFormat format) {
  switch (format) {
    case ReasoningFormat::kThink: return "<think> ... </think>";
    case ReasoningFormat::kCommandR: return "<|START_THINKING|> ... <|END_THINKING|>";
    case ReasoningFormat::kHarmony: return "harmony's analysis channel";
  }
  return "";
}

std::optional<ReasoningFormat> detect_reasoning_format(std::string_view source) {
  if (source.find(kHarmonyAnalysis) != std::string_view::npos) return ReasoningFormat::kHarmony;
  for (ReasoningFormat format : {ReasoningFormat::kThink, ReasoningFormat::kCommandR}) {
    const Tags& tags = tags_of(format);
    if (source.find(tags.open) != std::string_view::npos && source.find(tags.close) != std::string_view::npos)
      return format;
  }
  return std::nullopt;
}

bool marked_by_special_tokens(ReasoningFormat format) { return format != ReasoningFormat::kThink; }

bool prompt_opens_reasoning(ReasoningFormat format, std::string_view prompt) {
  if (format == ReasoningFormat::kHarmony) return false;
  const size_t end = prompt.find_last_not_of(kBlank);
  return end != std::string_view::npos && prompt.substr(0, end + 1).ends_with(tags_of(format).open);
}

std::string_view reasoning_close_tag(ReasoningFormat format) {
  return format == ReasoningFormat::kHarmony ? std::string_view{} : tags_of(format).close;
}

void ReasoningSplitter::feed(std::string_view text, std::string& reasoning, std::string& content) {
  held_ += text;
  if (format_ == ReasoningFormat::kHarmony) return feed_harmony(reasoning, content);
  feed_tagged(reasoning, content);
}

std::optional<std::string_view> ReasoningSplitter::take_until(std::string& to,
                                                              std::initializer_list<std::string_view> ends) {
  size_t at = std::string::npos;
  std::string_view found;
  for (std::string_view end : ends)
    if (const size_t pos = held_.find(end); pos < at) at = pos, found = end;
  if (at != std::string::npos) {
    to.append(held_, 0, at);
    held_.erase(0, at + found.size());
    return found;
  }
  size_t partial = 0;
  for (std::string_view end : ends) partial = std::max(partial, partial_marker_at_end(held_, end));
  to.append(held_, 0, held_.size() - partial);
  held_.erase(0, held_.size() - partial);
  return std::nullopt;
}

void ReasoningSplitter::feed_tagged(std::string& reasoning, std::string& content) {
  const Tags& tags = tags_of(format_);
  for (;;) {
    switch (state_) {
      case State::kStart: {
        const size_t first = held_.find_first_not_of(kBlank);
        if (first == std::string::npos) return;  // blank so far
        const std::string_view rest = std::string_view(held_).substr(first);
        if (rest.starts_with(tags.open)) {
          held_.erase(0, first + tags.open.size());
          state_ = State::kReasoning;
        } else if (tags.open.starts_with(rest)) {
          return;  // "<thi": wait
        } else {
          state_ = starts_inside_ ? State::kReasoning : State::kContent;
        }
        break;
      }
      case State::kReasoning:
        if (!take_until(reasoning, {tags.close})) return;
        state_ = State::kContent;
        break;
      case State::kContent:
      case State::kCall:
        if (format_ == ReasoningFormat::kThink) {
          content += held_;
          held_.clear();
          return;
        }
        // Command R: the text's response markers are dropped.
        if (!take_until(content, {kResponseBegin, kResponseEnd})) return;
        break;
    }
  }
}

void ReasoningSplitter::feed_harmony(std::string& reasoning, std::string& content) {
  for (;;) {
    if (state_ == State::kStart) {  // a header: [<|start|>]role and channel, to=recipient, <|message|>
      if (held_.starts_with(kHarmonyStart)) {
        held_.erase(0, kHarmonyStart.size());
        in_header_ = true;
      }
      if (!held_.empty() && kHarmonyStart.starts_with(held_)) return;
      const size_t message = held_.find(kHarmonyMessage);
      if (message == std::string::npos) return;
      const std::string_view header = std::string_view(held_).substr(0, message);
      if (!harmony_recipient(header).empty()) {
        content.append(kHarmonyStart).append(header).append(kHarmonyMessage);  // the tool parser's
        state_ = State::kCall;
      } else {
        state_ = header.find(kHarmonyAnalysis) != std::string_view::npos ? State::kReasoning : State::kContent;
      }
      held_.erase(0, message + kHarmonyMessage.size());
      in_header_ = false;
      continue;
    }
    std::string& to = state_ == State::kReasoning ? reasoning : content;
    const std::optional<std::string_view> end = take_until(to, {kHarmonyEnd, kHarmonyCall, kHarmonyReturn});
    if (!end) return;
    if (state_ == State::kCall) content += *end;
    state_ = State::kStart;
  }
}

bool ReasoningSplitter::in_reasoning() const {
  return state_ == State::kReasoning || (state_ == State::kStart && starts_inside_ && format_ != ReasoningFormat::kHarmony);
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
  // A harmony header cut off by the end ("<|start|>assistant") is markup;
  // other held text goes where the output stands.
  if (!in_header_) (in_reasoning() ? reasoning : content) += held_;
  held_.clear();
}

}  // namespace zl::server
