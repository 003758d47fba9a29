#include "server/responses_api.h"

#include <chrono>

#include "server/json_text.h"

namespace zl::server {
namespace {

using ojson = nlohmann::ordered_json;
using OptError = std::optional<ApiError>;

ojson merged(ojson a, const ojson& b) {
  a.update(b);
  return a;
}

// A message's content: a string, or a list of text parts (input_text,
// output_text), joined with "\n".
OptError content_text(const ojson& content, const std::string& at, std::string& out) {
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request("input", at + ".content must be a string or a list of text parts");
  out.clear();
  for (size_t k = 0; k < content.size(); ++k) {
    const ojson& part = content[k];
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if ((type != "input_text" && type != "output_text" && type != "text") || !part.contains("text") ||
        !part["text"].is_string())
      return bad_request("input", str_cat(at, ".content[", k, "] must be {\"type\": \"input_text\", \"text\": ...}"));
    if (k > 0) out += "\n";
    out += part["text"].get<std::string>();
  }
  return std::nullopt;
}

// One input item onto the chat messages. Consecutive function calls join
// one assistant message, as chat templates expect them.
OptError add_item(const ojson& item, size_t i, ojson& messages) {
  const std::string at = str_cat("input[", i, "]");
  if (!item.is_object()) return bad_request("input", at + " must be an object");
  const std::string type = item.value("type", item.contains("role") ? "message" : "");
  if (type == "message") {
    std::string role = item.value("role", "");
    if (role == "developer") role = "system";
    if (role != "user" && role != "system" && role != "assistant")
      return bad_request("input", at + ".role must be user, system, developer or assistant");
    std::string text;
    if (OptError e = content_text(item.contains("content") ? item["content"] : ojson(""), at, text)) return e;
    messages.push_back({{"role", role}, {"content", text}});
    return std::nullopt;
  }
  if (type == "function_call") {
    if (!item.contains("call_id") || !item["call_id"].is_string() || !item.contains("name") || !item["name"].is_string())
      return bad_request("input", at + " (a function_call) needs call_id and name");
    ojson call{{"id", item["call_id"]},
               {"type", "function"},
               {"function", {{"name", item["name"]}, {"arguments", item.value("arguments", "{}")}}}};
    if (messages.empty() || messages.back()["role"] != "assistant" || !messages.back().contains("tool_calls"))
      messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", ojson::array()}});
    messages.back()["tool_calls"].push_back(std::move(call));
    return std::nullopt;
  }
  if (type == "function_call_output") {
    if (!item.contains("call_id") || !item["call_id"].is_string())
      return bad_request("input", at + " (a function_call_output) needs call_id");
    std::string text;
    if (OptError e = content_text(item.contains("output") ? item["output"] : ojson(""), at, text)) return e;
    messages.push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", text}});
    return std::nullopt;
  }
  if (type == "reasoning") return std::nullopt;  // a reasoning model's summary: nothing to render
  return bad_request("input", at + ".type '" + type + "' is not supported; use message, function_call or function_call_output");
}

// Responses' function tools {"type": "function", "name", "parameters", ...} as chat's.
OptError convert_tools(const ojson& tools, ojson& out) {
  if (!tools.is_array()) return bad_request("tools", "tools must be a list");
  out = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& tool = tools[i];
    if (!tool.is_object() || tool.value("type", "") != "function")
      return bad_request("tools", str_cat("tools[", i, "].type must be \"function\" (the only tools served)"));
    ojson function{{"name", tool.value("name", "")}};
    if (tool.contains("description")) function["description"] = tool["description"];
    if (tool.contains("parameters") && !tool["parameters"].is_null()) function["parameters"] = tool["parameters"];
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return std::nullopt;
}

OptError convert_options(const ojson& j, ojson& chat) {
  if (j.contains("tools") && !j["tools"].is_null()) {
    ojson tools;
    if (OptError e = convert_tools(j["tools"], tools)) return e;
    chat["tools"] = std::move(tools);
  }
  if (j.contains("tool_choice") && !j["tool_choice"].is_null()) {
    const ojson& choice = j["tool_choice"];
    chat["tool_choice"] = choice.is_object() && choice.value("type", "") == "function"
                              ? ojson{{"type", "function"}, {"function", {{"name", choice.value("name", "")}}}}
                              : choice;
  }
  if (j.contains("max_output_tokens") && !j["max_output_tokens"].is_null()) chat["max_tokens"] = j["max_output_tokens"];
  for (const char* key : {"temperature", "top_p", "seed", "stop", "top_k", "min_p", "ignore_eos"})
    if (j.contains(key) && !j[key].is_null()) chat[key] = j[key];
  if (const auto text = j.find("text"); text != j.end() && text->is_object() && text->contains("format")) {
    const ojson& format = (*text)["format"];
    const std::string type = format.is_object() ? format.value("type", "") : "";
    if (type == "json_schema") {
      ojson schema{{"name", format.value("name", "response")}, {"schema", format.value("schema", ojson::object())}};
      if (format.contains("strict")) schema["strict"] = format["strict"];
      chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
    } else if (type == "json_object" || type == "text") {
      chat["response_format"] = {{"type", type}};
    } else {
      return bad_request("text.format", "text.format.type must be text, json_object or json_schema");
    }
  }
  return std::nullopt;
}

std::string suffix(const std::string& id) { return id.substr(id.find('_') + 1); }

ojson reasoning_item(const ResponseMeta& meta, const std::string& text) {
  return {{"type", "reasoning"},
          {"id", "rs_" + suffix(meta.id)},
          {"status", "completed"},
          {"summary", ojson::array()},
          {"content", ojson::array({{{"type", "reasoning_text"}, {"text", text}}})}};
}

ojson message_item(const ResponseMeta& meta, const std::string& text) {
  return {{"type", "message"},
          {"id", "msg_" + suffix(meta.id)},
          {"status", "completed"},
          {"role", "assistant"},
          {"content", ojson::array({{{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}}})}};
}

ojson output_items(const ResponseMeta& meta, const ChoiceOutput& c) {
  ojson items = ojson::array();
  if (!c.reasoning.empty()) items.push_back(reasoning_item(meta, c.reasoning));
  if (!c.text.empty() || c.tool_calls.empty()) items.push_back(message_item(meta, c.text));
  for (const ToolCall& call : c.tool_calls) {
    items.push_back({{"type", "function_call"}, {"id", "fc_" + suffix(call.id)}, {"call_id", call.id},
                     {"name", call.name}, {"arguments", call.arguments}, {"status", "completed"}});
  }
  return items;
}

// The response as it stands: in progress (no choice yet), or finished with
// `output`, the choice's items (output_items).
ojson response_object(const ResponseMeta& meta, const ResponsesRequest& request, const ChoiceOutput* c,
                      ojson output = ojson::array()) {
  ojson r{{"id", meta.id}, {"object", "response"}, {"created_at", meta.created}, {"model", meta.model}};
  const bool incomplete = c && c->finish && c->finish->reason == FinishReason::kLength && c->tool_calls.empty();
  r["status"] = !c ? "in_progress" : incomplete ? "incomplete" : "completed";
  r["error"] = nullptr;
  r["incomplete_details"] = incomplete ? ojson{{"reason", "max_output_tokens"}} : ojson(nullptr);
  for (const auto& [key, value] : request.echo.items()) r[key] = value;
  r["output"] = std::move(output);
  if (c && c->finish) {
    const int64_t in = c->finish->num_prompt_tokens, out = c->finish->num_generated_tokens;
    r["usage"] = {{"input_tokens", in},
                  {"input_tokens_details", {{"cached_tokens", c->finish->num_cached_prompt_tokens}}},
                  {"output_tokens", out},
                  {"output_tokens_details", {{"reasoning_tokens", c->reasoning_tokens}}},
                  {"total_tokens", in + out}};
  } else {
    r["usage"] = nullptr;
  }
  return r;
}

}  // namespace

void ResponseStore::put(const std::string& id, ojson messages) {
  const size_t bytes = json_text(messages).size() + id.size();
  if (bytes > kMaxStoredBytes) return;
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.push_back(Entry{id, std::move(messages), bytes});
  by_id_[id] = std::prev(entries_.end());
  bytes_ += bytes;
  while (entries_.size() > kMaxStoredResponses || bytes_ > kMaxStoredBytes) {
    bytes_ -= entries_.front().bytes;
    by_id_.erase(entries_.front().id);
    entries_.pop_front();
  }
}

std::optional<ojson> ResponseStore::get(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second->messages;
}

namespace {

OptError convert(const ojson& j, const ResponseStore& store, ojson& chat, ResponsesRequest& out) {
  chat = ojson::object();
  if (j.contains("model")) chat["model"] = j["model"];
  ojson messages = ojson::array();
  if (const auto instructions = j.find("instructions"); instructions != j.end() && !instructions->is_null()) {
    if (!instructions->is_string()) return bad_request("instructions", "instructions must be a string");
    messages.push_back({{"role", "system"}, {"content", *instructions}});
  }
  if (const auto previous = j.find("previous_response_id"); previous != j.end() && !previous->is_null()) {
    if (!previous->is_string()) return bad_request("previous_response_id", "previous_response_id must be a string");
    std::optional<ojson> earlier = store.get(previous->get<std::string>());
    if (!earlier) return bad_request("previous_response_id", "no stored response '" + previous->get<std::string>() + "'");
    for (ojson& m : *earlier)
      if (m.value("role", "") != "system") messages.push_back(std::move(m));  // instructions do not carry over
  }
  const auto input = j.find("input");
  if (input == j.end() || input->is_null()) return bad_request("input", "input is required");
  if (input->is_string()) {
    messages.push_back({{"role", "user"}, {"content", *input}});
  } else if (input->is_array()) {
    for (size_t i = 0; i < input->size(); ++i)
      if (OptError e = add_item((*input)[i], i, messages)) return e;
  } else {
    return bad_request("input", "input must be a string or a list of items");
  }
  if (OptError e = convert_options(j, chat)) return e;
  chat["messages"] = messages;
  out.messages = std::move(messages);
  out.stream = j.value("stream", false);
  out.store = j.value("store", true);
  out.echo = ojson{{"instructions", j.value("instructions", ojson(nullptr))},
                   {"max_output_tokens", j.value("max_output_tokens", ojson(nullptr))},
                   {"parallel_tool_calls", j.value("parallel_tool_calls", true)},
                   {"previous_response_id", j.value("previous_response_id", ojson(nullptr))},
                   {"temperature", j.value("temperature", ojson(1.0))},
                   {"top_p", j.value("top_p", ojson(1.0))},
                   {"tool_choice", j.value("tool_choice", ojson("auto"))},
                   {"tools", j.value("tools", ojson::array())},
                   {"text", j.value("text", ojson{{"format", {{"type", "text"}}}})},
                   {"truncation", "disabled"},
                   {"store", out.store},
                   {"metadata", j.value("metadata", ojson::object())}};
  return std::nullopt;
}

}  // namespace

OptError responses_to_chat(std::string_view body, const ResponseStore& store, ojson& chat, ResponsesRequest& out) {
  ojson j = ojson::parse(body, nullptr, false);
  if (!j.is_object()) return bad_request("", "the request body is not a JSON object");
  // A field of an unexpected type makes nlohmann's value() throw: a 400, as
  // parse_chat_request answers it, never an exception out of the worker.
  try {
    return convert(j, store, chat, out);
  } catch (const std::exception& e) {
    return bad_request("", std::string("invalid request: ") + e.what());
  }
}

ojson stored_conversation(const ResponsesRequest& request, const ChoiceOutput& c) {
  ojson conversation = request.messages;
  ojson turn{{"role", "assistant"}, {"content", c.text}};
  for (const ToolCall& call : c.tool_calls) {
    if (!turn.contains("tool_calls")) turn["tool_calls"] = ojson::array();
    turn["tool_calls"].push_back(
        {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  conversation.push_back(std::move(turn));
  return conversation;
}

std::string response_body(const ResponseMeta& meta, const ResponsesRequest& request, const ChoiceOutput& c) {
  return json_text(response_object(meta, request, &c, output_items(meta, c)));
}

void ResponseEventStream::event(std::string& out, const char* type, ojson data) {
  data = merged(ojson{{"type", type}, {"sequence_number", sequence_++}}, data);
  out += str_cat("event: ", type, "\ndata: ", json_text(data), "\n\n");
}

std::string ResponseEventStream::begin() {
  std::string out;
  event(out, "response.created", {{"response", response_object(meta_, request_, nullptr)}});
  event(out, "response.in_progress", {{"response", response_object(meta_, request_, nullptr)}});
  return out;
}

// Output item `item` added, in progress and empty; `at` takes its index.
void ResponseEventStream::open(std::string& out, const ojson& item, std::optional<size_t>& at) {
  at = num_items_++;
  ojson started = item;
  started["status"] = "in_progress";
  started["content"] = ojson::array();
  event(out, "response.output_item.added", {{"output_index", *at}, {"item", started}});
  if (item["type"] == "message") {
    const ojson part{{"type", "output_text"}, {"text", ""}, {"annotations", ojson::array()}};
    event(out, "response.content_part.added",
          {{"item_id", item["id"]}, {"output_index", *at}, {"content_index", 0}, {"part", part}});
  }
}

std::string ResponseEventStream::add(const ChoiceOutput& piece) {
  whole_.text += piece.text;
  whole_.reasoning += piece.reasoning;
  whole_.reasoning_tokens += piece.reasoning_tokens;
  whole_.tool_calls.insert(whole_.tool_calls.end(), piece.tool_calls.begin(), piece.tool_calls.end());
  whole_.num_tokens = piece.num_tokens;
  // Items are opened empty: the whole output is built once, at the finish.
  std::string out;
  if (!piece.reasoning.empty()) {
    if (!reasoning_at_) open(out, reasoning_item(meta_, ""), reasoning_at_);
    event(out, "response.reasoning_text.delta", {{"item_id", "rs_" + suffix(meta_.id)}, {"output_index", *reasoning_at_},
                                                 {"content_index", 0}, {"delta", piece.reasoning}});
  }
  if (!piece.text.empty()) {
    if (!message_at_) open(out, message_item(meta_, ""), message_at_);
    event(out, "response.output_text.delta", {{"item_id", "msg_" + suffix(meta_.id)}, {"output_index", *message_at_},
                                              {"content_index", 0}, {"delta", piece.text}});
  }
  if (!piece.finish) return out;
  whole_.finish = piece.finish;
  return out + finish();
}

// The reasoning and message items, as far as they came, done.
void ResponseEventStream::close_text_items(std::string& out, const ojson& items) {
  if (reasoning_at_) {
    const ojson& item = items[*reasoning_at_];
    event(out, "response.reasoning_text.done",
          {{"item_id", item["id"]}, {"output_index", *reasoning_at_}, {"content_index", 0}, {"text", whole_.reasoning}});
    event(out, "response.output_item.done", {{"output_index", *reasoning_at_}, {"item", item}});
  }
  // A response with no text and no calls still answers one (empty) message.
  if (!message_at_ && whole_.tool_calls.empty()) open(out, items[num_items_], message_at_);
  if (message_at_) {
    const ojson& item = items[*message_at_];
    const ojson at{{"item_id", item["id"]}, {"output_index", *message_at_}, {"content_index", 0}};
    event(out, "response.output_text.done", merged(at, {{"text", whole_.text}}));
    event(out, "response.content_part.done", merged(at, {{"part", item["content"][0]}}));
    event(out, "response.output_item.done", {{"output_index", *message_at_}, {"item", item}});
  }
}

std::string ResponseEventStream::finish() {
  std::string out;
  if (whole_.finish->reason == FinishReason::kError) {
    event(out, "error", {{"code", "server_error"}, {"message", "generation failed: " + whole_.finish->stop_detail},
                         {"param", nullptr}});
    return out;
  }
  const ojson items = output_items(meta_, whole_);
  close_text_items(out, items);
  for (size_t i = num_items_; i < items.size(); ++i, ++num_items_) {  // the function calls
    const ojson& item = items[i];
    ojson started = item;
    started["status"] = "in_progress";
    started["arguments"] = "";
    event(out, "response.output_item.added", {{"output_index", i}, {"item", started}});
    const ojson at{{"item_id", item["id"]}, {"output_index", i}};
    event(out, "response.function_call_arguments.delta", merged(at, {{"delta", item["arguments"]}}));
    event(out, "response.function_call_arguments.done", merged(at, {{"arguments", item["arguments"]}}));
    event(out, "response.output_item.done", {{"output_index", i}, {"item", item}});
  }
  const bool incomplete = whole_.finish->reason == FinishReason::kLength && whole_.tool_calls.empty();
  event(out, incomplete ? "response.incomplete" : "response.completed",
        {{"response", response_object(meta_, request_, &whole_, items)}});
  return out;
}

}  // namespace zl::server
