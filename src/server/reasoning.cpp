#include "server/reasoning.h"

#include <algorithm>

namespace zl::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";
constexpr std::string_view kBlank = " \t\r\n";

// The longest suffix of `text` that is a proper prefix of `tag`: bytes that
// may be the tag's start, cut by a token boundary.
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

std::optional<ReasoningFormat> reasoning_format_named(std::string_view name) {
  if (name == "deepseek_r1" || name == "qwen3") return ReasoningFormat::kThink;
  return std::nullopt;
}

std::string reasoning_format_names() { return "deepseek_r1, qwen3"; }

std::optional<ReasoningFormat> detect_reasoning_format(std::string_view template_source) {
  if (template_source.find(kOpen) != std::string_view::npos && template_source.find(kClose) != std::string_view::npos)
    return ReasoningFormat::kThink;
  return std::nullopt;
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const size_t end = prompt.find_last_not_of(kBlank);
  return end != std::string_view::npos && prompt.substr(0, end + 1).ends_with(kOpen);
}

void ReasoningSplitter::feed(std::string_view text, std::string& reasoning, std::string& content) {
  held_ += text;
  for (;;) {
    switch (state_) {
      case State::kStart: {
        const size_t first = held_.find_first_not_of(kBlank);
        if (first == std::string::npos) return;  // blank so far
        const std::string_view rest = std::string_view(held_).substr(first);
        if (rest.starts_with(kOpen)) {
          held_.erase(0, first + kOpen.size());
          state_ = State::kReasoning;
        } else if (kOpen.starts_with(rest)) {
          return;  // "<thi": wait
        } else {
          state_ = starts_inside_ ? State::kReasoning : State::kContent;
        }
        break;
      }
      case State::kReasoning: {
        if (const size_t close = held_.find(kClose); close != std::string::npos) {
          reasoning.append(held_, 0, close);
          held_.erase(0, close + kClose.size());
          state_ = State::kContent;
          break;
        }
        const size_t ready = held_.size() - partial_tag_suffix(held_, kClose);
        reasoning.append(held_, 0, ready);
        held_.erase(0, ready);
        return;
      }
      case State::kContent:
        content += held_;
        held_.clear();
        return;
    }
  }
}

void ReasoningSplitter::finish(std::string& reasoning, std::string& content) {
  const bool in_reasoning = state_ == State::kReasoning || (state_ == State::kStart && starts_inside_);
  (in_reasoning ? reasoning : content) += held_;
  held_.clear();
}

}  // namespace zl::server
