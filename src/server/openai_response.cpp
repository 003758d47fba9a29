// The response side of openai_api.h: completion and chat bodies and
// stream chunks (choices, logprobs in both shapes, tool calls, usage,
// llama-server's timings), errors and the model list.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/json_text.h"
#include "server/openai_api.h"

namespace zl::server {
namespace {

using nlohmann::json;

// Token i's text: the piece the stream gave it (so the pieces join into the
// choice's text, leading spaces kept), else its decoding alone.
std::string token_text(const ChoiceOutput& c, size_t i, const Tokenizer& tokenizer) {
  if (i < c.token_texts.size()) return c.token_texts[i];
  return tokenizer.decode(std::span<const int32_t>(&c.token_ids[i], 1), false);
}

std::string alternative_text(int32_t id, const Tokenizer& tokenizer) {
  return tokenizer.decode(std::span<const int32_t>(&id, 1), false);
}

json bytes_json(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(c);
  return bytes;
}

// Chat's logprobs: {"content": [{token, logprob, bytes, top_logprobs}]}.
json chat_logprobs_json(const ChoiceOutput& c, const Tokenizer& tokenizer) {
  json content = json::array();
  for (size_t i = 0; i < c.token_ids.size(); ++i) {
    std::string text = token_text(c, i, tokenizer);
    json top = json::array();
    if (i < c.top_logprobs.size())
      for (const TokenLogprob& t : c.top_logprobs[i]) {
        std::string alt = alternative_text(t.id, tokenizer);
        top.push_back({{"token", alt}, {"logprob", t.logprob}, {"bytes", bytes_json(alt)}});
      }
    content.push_back({{"token", text}, {"logprob", c.token_logprobs[i]}, {"bytes", bytes_json(text)},
                       {"top_logprobs", std::move(top)}});
  }
  return json{{"content", std::move(content)}};
}

json logprobs_json(const ChoiceOutput& piece, const Tokenizer& tokenizer) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  int64_t offset = piece.text_offset;
  for (size_t i = 0; i < piece.token_ids.size(); ++i) {
    std::string text = token_text(piece, i, tokenizer);
    offsets.push_back(offset);
    offset += static_cast<int64_t>(text.size());
    tokens.push_back(std::move(text));
    token_logprobs.push_back(piece.token_logprobs[i]);
    json alternatives = json::object();
    if (i < piece.top_logprobs.size())
      for (const TokenLogprob& t : piece.top_logprobs[i])
        alternatives[alternative_text(t.id, tokenizer)] = t.logprob;
    top.push_back(std::move(alternatives));
  }
  return json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

// llama-server's "timings" names, from the engine's per-request timings.
json timings_json(const FinishEvent& f) {
  const RequestTimings& t = f.timings;
  int32_t prompt_n = f.num_prompt_tokens - f.num_cached_prompt_tokens;
  double prompt_ms = std::max(0.0, t.first_token_s - t.queue_s) * 1e3;
  double predicted_ms = std::max(0.0, t.finish_s - t.first_token_s) * 1e3;
  int32_t predicted_n = f.num_generated_tokens;
  auto per_token = [](double ms, int32_t n) { return n > 0 ? ms / n : 0.0; };
  auto per_second = [](double ms, int32_t n) { return ms > 0 ? n * 1e3 / ms : 0.0; };
  return json{{"cache_n", f.num_cached_prompt_tokens},
              {"queue_ms", t.queue_s * 1e3},
              {"prompt_n", prompt_n},
              {"prompt_ms", prompt_ms},
              {"prompt_per_token_ms", per_token(prompt_ms, prompt_n)},
              {"prompt_per_second", per_second(prompt_ms, prompt_n)},
              {"predicted_n", predicted_n},
              {"predicted_ms", predicted_ms},
              {"predicted_per_token_ms", per_token(predicted_ms, predicted_n)},
              {"predicted_per_second", per_second(predicted_ms, predicted_n)},
              {"ttft_ms", t.first_token_s * 1e3}};
}

// OpenAI's message.tool_calls; a stream's delta.tool_calls also number them.
json tool_calls_json(const std::vector<ToolCall>& calls, bool indexed) {
  json list = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    json call{{"id", calls[i].id}, {"type", "function"},
              {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (indexed) call["index"] = i;
    list.push_back(std::move(call));
  }
  return list;
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

// vLLM's "reasoning", and "reasoning_content", the name llama-server, DeepSeek's
// API and vLLM before 0.11 use (clients such as LiteLLM read it).
void add_reasoning(json& message, const json& reasoning) {
  message["reasoning"] = reasoning;
  message["reasoning_content"] = reasoning;
}

// vLLM's stop_reason: the stop string or requested stop id that ended the
// choice; null for eos (and the chat template's end of turn), a length
// finish, or a choice still going.
json stop_reason_json(const ChoiceOutput& c, const CompletionRequest& request) {
  if (!c.finish) return nullptr;
  if (!c.finish->stop_string.empty()) return c.finish->stop_string;
  const auto requested = request.stop_token_ids.begin() + static_cast<ptrdiff_t>(request.num_requested_stop_ids);
  if (c.finish->stop_token >= 0 && std::find(request.stop_token_ids.begin(), requested, c.finish->stop_token) != requested)
    return c.finish->stop_token;
  return nullptr;
}

json choice_json(int32_t index, const ChoiceOutput& c, const CompletionRequest& request, const Tokenizer& tokenizer) {
  if (request.chat) {
    json choice{{"index", index}};
    if (request.stream) {
      choice["delta"] = c.text.empty() ? json::object() : json{{"content", c.text}};
      if (!c.reasoning.empty()) add_reasoning(choice["delta"], c.reasoning);
      if (!c.tool_calls.empty()) choice["delta"]["tool_calls"] = tool_calls_json(c.tool_calls, true);
    } else {
      choice["message"] = json{{"role", "assistant"}, {"content", request.chat_echo + c.text}};
      if (request.reasoning) add_reasoning(choice["message"], c.reasoning.empty() ? json(nullptr) : json(c.reasoning));
      if (request.chat_echo.empty() && c.text.empty() && (!c.tool_calls.empty() || !c.reasoning.empty()))
        choice["message"]["content"] = nullptr;
      if (!c.tool_calls.empty()) choice["message"]["tool_calls"] = tool_calls_json(c.tool_calls, false);
    }
    choice["logprobs"] = request.want_logprobs ? chat_logprobs_json(c, tokenizer) : json(nullptr);
    if (request.return_token_ids) choice["token_ids"] = c.token_ids;
    choice["finish_reason"] = !c.finish ? json(nullptr)
                              : c.tool_calls.empty() ? json(finish_reason_string(c.finish->reason))
                                                     : json("tool_calls");
    choice["stop_reason"] = stop_reason_json(c, request);
    return choice;
  }
  // echo: the prompt before the text (a stream sends it in a chunk of its own first).
  json choice{{"index", index}, {"text", request.echo && !request.stream ? echo_text(request, index, tokenizer) + c.text
                                                                         : c.text}};
  choice["logprobs"] = request.want_logprobs ? logprobs_json(c, tokenizer) : json(nullptr);
  if (request.return_token_ids) choice["token_ids"] = c.token_ids;
  choice["finish_reason"] = c.finish ? json(finish_reason_string(c.finish->reason)) : json(nullptr);
  choice["stop_reason"] = stop_reason_json(c, request);
  return choice;
}

int64_t prompt_tokens_of(const CompletionRequest& request, int32_t index) {
  return static_cast<int64_t>(request.prompts[static_cast<size_t>(index / request.n)].size());
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return json{{"prompt_tokens", prompt_tokens},
              {"completion_tokens", completion_tokens},
              {"total_tokens", prompt_tokens + completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

// system_fingerprint: the build, as OpenAI's names the backend configuration.
json head_json(const ResponseMeta& meta) {
  return json{{"id", meta.id}, {"object", meta.object}, {"created", meta.created}, {"model", meta.model},
              {"system_fingerprint", "zerolayer-" ZL_VERSION_STRING}};
}

}  // namespace

std::string render_body(const CompletionRequest& request, bool chat) {
  if (chat) return json_text(json{{"token_ids", request.prompts.at(0)}});
  json out = json::array();
  for (const std::vector<int32_t>& prompt : request.prompts) out.push_back(json{{"token_ids", prompt}});
  return json_text(out);
}

std::string echo_text(const CompletionRequest& request, int32_t index, const Tokenizer& tokenizer) {
  return tokenizer.decode(request.prompts[static_cast<size_t>(index / request.n)], /*skip_special=*/true);
}

const char* finish_reason_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAborted: return "abort";
    case FinishReason::kError: return "error";
  }
  return "error";
}

std::string completion_body(const ResponseMeta& meta, const CompletionRequest& request,
                            std::span<const ChoiceOutput> choices, const Tokenizer& tokenizer) {
  json j = head_json(meta);
  json list = json::array();
  int64_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceOutput& c = choices[i];
    json choice = choice_json(static_cast<int32_t>(i), c, request, tokenizer);
    if (c.finish) {
      choice["timings"] = timings_json(*c.finish);
      completion_tokens += c.finish->num_generated_tokens;
      if (i % static_cast<size_t>(request.n) == 0) {  // each prompt counts once, as OpenAI does
        prompt_tokens += c.finish->num_prompt_tokens;
        cached_tokens += c.finish->num_cached_prompt_tokens;
      }
    }
    list.push_back(std::move(choice));
  }
  j["choices"] = std::move(list);
  j["usage"] = usage_json(prompt_tokens, completion_tokens, cached_tokens);
  if (!choices.empty() && choices[0].finish) j["timings"] = timings_json(*choices[0].finish);
  return json_text(j);
}

std::string completion_chunk(const ResponseMeta& meta, int32_t index, const ChoiceOutput& piece,
                             const CompletionRequest& request, const Tokenizer& tokenizer) {
  json j = head_json(meta);
  j["choices"] = json::array({choice_json(index, piece, request, tokenizer)});
  if (piece.finish) j["timings"] = timings_json(*piece.finish);
  if (request.continuous_usage) j["usage"] = usage_json(prompt_tokens_of(request, index), piece.num_tokens, 0);
  return json_text(j);
}

std::string chat_role_chunk(const ResponseMeta& meta, int32_t index) {
  json j = head_json(meta);
  json choice{{"index", index}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
              {"finish_reason", nullptr}};
  j["choices"] = json::array({std::move(choice)});
  return json_text(j);
}

std::string usage_chunk(const ResponseMeta& meta, int64_t prompt_tokens, int64_t completion_tokens) {
  json j = head_json(meta);
  j["choices"] = json::array();
  j["usage"] = usage_json(prompt_tokens, completion_tokens, 0);
  return json_text(j);
}

std::string error_body(const ApiError& error) {
  json e{{"message", error.message}, {"type", error.type}};
  e["param"] = error.param.empty() ? json(nullptr) : json(error.param);
  e["code"] = error.code.empty() ? json(nullptr) : json(error.code);
  return json_text(json{{"error", e}});
}

std::string models_body(const std::string& served_name, const std::string& root, int64_t created,
                        int32_t max_model_len, bool one) {
  json model{{"id", served_name}, {"object", "model"},   {"created", created},
             {"owned_by", "zerolayer"}, {"root", root}, {"max_model_len", max_model_len}};
  return one ? json_text(model) : json_text(json{{"object", "list"}, {"data", json::array({model})}});
}

}  // namespace zl::server
