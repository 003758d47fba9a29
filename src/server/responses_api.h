// POST /v1/responses, OpenAI's Responses API as vLLM serves it, on top of
// the chat path: the body becomes a chat completions body (input items to
// messages, instructions to a system message, function tools and
// tool_choice to chat's, text.format to response_format, max_output_tokens
// to max_tokens, previous_response_id to the stored conversation before
// it), which parse_chat_request validates and renders as any chat request;
// the finished choice becomes a response object (a message item and
// function_call items), or its stream of events.
//
// Kept in memory for previous_response_id: each stored response's whole
// conversation, at most kMaxStoredResponses of them and kMaxStoredBytes in
// all, the oldest dropped first.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "server/openai_api.h"

namespace zl::server {

class ResponseStore {
 public:
  static constexpr size_t kMaxStoredResponses = 4096;
  static constexpr size_t kMaxStoredBytes = 64u << 20;

  void put(const std::string& id, nlohmann::ordered_json messages);
  // The conversation stored under `id` (its input and output as chat messages).
  std::optional<nlohmann::ordered_json> get(const std::string& id) const;

 private:
  struct Entry {
    std::string id;
    nlohmann::ordered_json messages;
    size_t bytes = 0;
  };
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // oldest first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_;
  size_t bytes_ = 0;
};

// What a Responses request keeps beside its chat form, for its answer.
struct ResponsesRequest {
  bool stream = false;                  // the chat request itself runs unstreamed
  bool store = true;
  nlohmann::ordered_json echo;          // instructions, tools, tool_choice, ... as the response repeats them
  nlohmann::ordered_json messages;      // the conversation sent to the model, for store
};

// The Responses body as a chat completions body; errors name the Responses field.
std::optional<ApiError> responses_to_chat(std::string_view body, const ResponseStore& store,
                                          nlohmann::ordered_json& chat_body, ResponsesRequest& out);

// The response object of a finished choice (tool calls already parsed out
// of its text).
std::string response_body(const ResponseMeta& meta, const ResponsesRequest& request, const ChoiceOutput& choice);
// The conversation to store under a finished response's id: its input and
// its output as an assistant message.
nlohmann::ordered_json stored_conversation(const ResponsesRequest& request, const ChoiceOutput& choice);

// A streamed response's server-sent events as its text arrives: created and
// in_progress first; then, piece by piece, reasoning_text and output_text
// deltas, each item opened by its first text; then with the finish the items
// done, the function calls whole (parsed at the end), and completed or
// incomplete (or an error event).
class ResponseEventStream {
 public:
  ResponseEventStream(const ResponseMeta& meta, const ResponsesRequest& request) : meta_(meta), request_(request) {}

  std::string begin();
  // `piece`: the text, reasoning and tool calls since the last piece, and the
  // finish with the last.
  std::string add(const ChoiceOutput& piece);
  // Everything added so far, as one choice.
  const ChoiceOutput& whole() const { return whole_; }

 private:
  void event(std::string& out, const char* type, nlohmann::ordered_json data);
  void open(std::string& out, const nlohmann::ordered_json& item, std::optional<size_t>& at);
  void close_text_items(std::string& out, const nlohmann::ordered_json& items);
  std::string finish();

  const ResponseMeta& meta_;
  const ResponsesRequest& request_;
  ChoiceOutput whole_;
  int64_t sequence_ = 0;
  size_t num_items_ = 0;  // output items opened so far
  std::optional<size_t> reasoning_at_, message_at_;
};

}  // namespace zl::server
