// The OpenAI-compatible wire shapes: a JSON body in, a validated
// CompletionRequest out (every error names its field, as OpenAI's "param"),
// and the response, stream-chunk, error, tokenize and detokenize bodies out.
//
// Pure functions: no sockets, no engine thread, no exceptions escape (all of
// nlohmann::json's are caught here). Text prompts are tokenized here, on a
// CPU worker thread (cpu_workers.h), so n > 1 shares one tokenization and the
// prompt length is known before anything reaches the engine. Output JSON is
// dumped with invalid UTF-8 replaced (U+FFFD), so a single-token decode can
// never make dump() throw.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bundle/chat_prompt.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"
#include "zerolayer/request.h"
#include "zerolayer/sampling.h"

namespace zl::server {

struct ResponsesRequest;  // server/responses_api.h

// A failed request, in OpenAI's error shape {"error": {message, type, param, code}}.
struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field; "" is sent as null
  std::string code;   // "" is sent as null
};

// A 400 invalid_request_error naming `param`, the shape every parser here answers with.
ApiError bad_request(std::string param, std::string message, std::string code = "");

// What validation needs to know about the served model.
struct ApiLimits {
  int32_t vocab_size = 0;
  int32_t max_seq_len = 0;
  int32_t max_stop_strings = 64;
  int32_t max_choices = 1024;         // prompts x n
  // Text longer than this cannot tokenize into max_seq_len tokens; 0: max_seq_len x kMaxPromptBytesPerToken.
  int64_t max_prompt_bytes = 0;
};

struct CompletionRequest {
  std::string model;                       // as sent; "" when absent
  std::vector<std::vector<int32_t>> prompts;  // tokenized, one per prompt
  int32_t n = static_cast<int32_t>(field::kN.default_value);
  int32_t max_tokens = static_cast<int32_t>(field::kMaxTokens.default_value);
  SamplingParams sampling;                 // num_top_logprobs set from "logprobs"
  bool want_logprobs = false;              // "logprobs" present (0 means the chosen token only)
  std::vector<std::string> stop;
  bool ignore_eos = false;
  bool include_stop_str = false;           // vLLM's include_stop_str_in_output: the stop string ends the text
  // vLLM's skip_special_tokens; chat with a tool syntax marked by special
  // tokens defaults it to false, so that its parser sees them.
  bool skip_special_tokens = true;
  bool stream = false;
  bool include_usage = false;              // stream_options.include_usage
  bool continuous_usage = false;           // stream_options.continuous_usage_stats: usage in every chunk
  bool echo = false;                       // completions: the prompt's text before the output
  std::string chat_echo;                   // chat with echo: the final assistant message's text, before the output
  std::string cache_salt;
  int32_t priority = 0;
  float min_token_prob = 0.0f;             // zerolayer extension
  bool return_token_ids = false;           // vLLM extension: choices carry "token_ids"
  bool chat = false;                       // /v1/chat/completions: message/delta choices
  // vLLM's stop_token_ids (the first num_requested_stop_ids), then, on
  // chat, the template's end-of-turn ids.
  std::vector<int32_t> stop_token_ids;
  size_t num_requested_stop_ids = 0;
  // response_format and the other fields of server/structured_fields.h;
  // compiled on the worker (Engine::compile_grammar) before the job starts.
  StructuredOutput structured_output;
  // Chat with tools: the syntax the output's tool calls are parsed in
  // (server/chat_tools.h); unset: the output is text.
  std::optional<ToolCallFormat> tool_format;
  // Chat with a reasoning parser (server/reasoning.h): the output's
  // reasoning part goes to "reasoning"; reasoning_opened: the prompt leaves
  // the output inside it. Under a grammar only where the prompt opens it
  // (the grammar then holds after its end: StructuredOutput::after_ids).
  std::optional<ReasoningFormat> reasoning;
  bool reasoning_opened = false;
  // Set for POST /v1/responses (run as this chat request, answered as a response).
  std::shared_ptr<const ResponsesRequest> responses;
};

// The served model's chat template, for /v1/chat/completions and /apply-template.
struct ChatSettings {
  LoadedChatTemplate loaded;    // loaded.chat_template null: the model has none
  std::string missing_message;  // why there is none (sent with the 400)
  // The template's tool-call syntax (serve --tool-call-parser, else detected
  // from its source); unset: tool calls are not parsed.
  std::optional<ToolCallFormat> tool_format;
  // serve --reasoning-parser, else detected from the template's source;
  // unset: reasoning stays in the content.
  std::optional<ReasoningFormat> reasoning_format;
};

// Parses and validates a /v1/completions body. On error returns the ApiError
// and leaves `out` partly filled.
std::optional<ApiError> parse_completion_request(std::string_view body, const Tokenizer& tokenizer,
                                                 const ApiLimits& limits, CompletionRequest& out);

// Parses and validates a /v1/chat/completions body: messages (roles system,
// user, assistant, tool; content a string or a list of text parts), tools,
// tool_choice, chat_template_kwargs, add_generation_prompt, and the sampling
// fields of /v1/completions (max_completion_tokens aliases max_tokens). The
// conversation is rendered through the template and tokenized into
// out.prompts[0]; `rendered` (if not null) receives the text.
std::optional<ApiError> parse_chat_request(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                           const ChatSettings& chat, CompletionRequest& out,
                                           std::string* rendered = nullptr);
// The same for a body already parsed (POST /v1/responses makes one).
std::optional<ApiError> parse_chat_object(const nlohmann::ordered_json& body, const Tokenizer& tokenizer,
                                          const ApiLimits& limits, const ChatSettings& chat, CompletionRequest& out);

// POST /apply-template: a chat body in, {"prompt": rendered_text} out.
std::optional<ApiError> apply_template_body(std::string_view body, const ChatSettings& chat, std::string& out);

// The engine request for choice `choice_index` of prompt `prompt_index`:
// seeded requests get seed + choice_index so the n choices differ but repeat.
Request make_engine_request(const CompletionRequest& request, size_t prompt_index, int32_t choice_index);

// Maps an Engine::submit error to the HTTP answer: invalid_argument and
// out_of_range are 400 (param taken from the message's leading field name),
// a full waiting queue is 503 (the caller adds Retry-After), a request that
// can never fit the KV pool is 400.
ApiError submit_error(const Status& status);

// One choice as it accumulates (streaming: since the last chunk).
struct ChoiceOutput {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<float> token_logprobs;
  std::vector<std::string> token_texts;    // with logprobs or a stream: each token's piece of `text`
  int64_t num_tokens = 0;                  // generated so far, this piece's included
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  int64_t text_offset = 0;                 // bytes of text before this piece (logprobs.text_offset)
  std::vector<ToolCall> tool_calls;        // chat with a tool parser: the calls parsed at the end
  std::string reasoning;                   // chat with a reasoning parser: the <think> part
  int64_t reasoning_tokens = 0;            // the tokens fed while inside it, or that added to it

  std::optional<FinishEvent> finish;
};

// Identity shared by every body of one response.
struct ResponseMeta {
  std::string id;                          // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;                     // unix seconds
  std::string model;
  std::string object = "text_completion";  // chat: "chat.completion" or "chat.completion.chunk"
};

const char* finish_reason_string(FinishReason reason);

// The full non-streaming body: choices, usage and timings (llama-server's names).
std::string completion_body(const ResponseMeta& meta, const CompletionRequest& request,
                            std::span<const ChoiceOutput> choices, const Tokenizer& tokenizer);
// One streaming chunk for one choice (finish_reason and timings when finished).
std::string completion_chunk(const ResponseMeta& meta, int32_t index, const ChoiceOutput& piece,
                             const CompletionRequest& request, const Tokenizer& tokenizer);
// echo: the prompt of choice `index` as text.
std::string echo_text(const CompletionRequest& request, int32_t index, const Tokenizer& tokenizer);
// Chat streams: the first chunk of choice `index`, delta {"role": "assistant", "content": ""}.
std::string chat_role_chunk(const ResponseMeta& meta, int32_t index);
// The closing usage chunk (stream_options.include_usage): empty choices.
std::string usage_chunk(const ResponseMeta& meta, int64_t prompt_tokens, int64_t completion_tokens);

std::string error_body(const ApiError& error);

// POST /tokenize: {"prompt": text, "add_special_tokens": bool} or {"messages": [...],
// "add_generation_prompt", ...} (rendered as /apply-template does) -> {"tokens", "count", "max_model_len"}.
std::optional<ApiError> tokenize_body(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                      const ChatSettings& chat, std::string& out);
// POST /detokenize: {"tokens": [ids]} -> {"prompt": text}.
std::optional<ApiError> detokenize_body(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                        std::string& out);

// GET /v1/models (the list), or GET /v1/models/{id} (`one`: the model alone).
// POST /v1/completions/render and /v1/chat/completions/render (vLLM's; what
// vllm-router's kv_aware policy asks every replica before routing): the
// prompt token ids a request would run on, [{"token_ids": [...]}, ...] per
// prompt, or {"token_ids": [...]} for chat.
std::string render_body(const CompletionRequest& request, bool chat);
std::string models_body(const std::string& served_name, const std::string& root, int64_t created,
                        int32_t max_model_len, bool one = false);

}  // namespace zl::server
