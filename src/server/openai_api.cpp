#include "server/openai_api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "bundle/chat_prompt.h"
#include "core/log.h"
#include "server/chat_tools.h"
#include "server/fill_in_middle.h"
#include "server/json_text.h"
#include "server/structured_fields.h"

namespace zl::server {
namespace {

using nlohmann::json;
using OptError = std::optional<ApiError>;

// The last object key before byte `pos`: a parse error (NaN, Infinity,
// ill-formed UTF-8 inside a value) can then name the field it happened in.
// A heuristic over raw bytes; "" when nothing key-like precedes.
std::string key_before(std::string_view body, size_t pos) {
  pos = std::min(pos, body.size());
  for (size_t i = pos; i-- > 0;) {
    if (body[i] != ':') continue;
    size_t j = i;
    while (j > 0 && std::isspace(static_cast<unsigned char>(body[j - 1]))) --j;
    if (j < 2 || body[j - 1] != '"') continue;
    size_t start = body.rfind('"', j - 2);
    if (start == std::string_view::npos || j - 1 - start > 64) return "";
    return std::string(body.substr(start + 1, j - 2 - start));
  }
  return "";
}

// Nesting beyond this is refused before parsing: no request needs it, and it
// bounds the parser's and destructor's work on hostile bodies.
constexpr int kMaxJsonDepth = 64;

OptError check_depth(std::string_view body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return bad_request("", str_cat("the request body nests deeper than ", kMaxJsonDepth, " levels"));
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

OptError parse_object(std::string_view body, json& out) {
  if (OptError e = check_depth(body)) return e;
  try {
    out = json::parse(body.begin(), body.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    std::string key = key_before(body, e.byte > 0 ? e.byte - 1 : 0);
    return bad_request(key, "the request body is not valid JSON" + (key.empty() ? "" : " (in field '" + key + "')") + ": " + what,
               "invalid_json");
  } catch (const std::exception& e) {
    return bad_request("", std::string("the request body is not valid JSON: ") + e.what(), "invalid_json");
  }
  if (!out.is_object()) return bad_request("", "the request body must be a JSON object", "invalid_json");
  return std::nullopt;
}

const json* find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A field of zerolayer/request_fields.h's table, checked as the engine
// will see it (as a float, for a field that is not an integer).
// `alias`, when given, is the key read instead of the field's name (chat's
// max_completion_tokens); errors then name the alias and the field.
template <typename T>
OptError read_field(const json& j, const RequestField& f, T& out, int64_t context = 0, const char* alias = nullptr) {
  const char* key = alias ? alias : f.name;
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (f.integer ? !v->is_number_integer() : !v->is_number())
    return bad_request(key, str_cat(key, f.integer ? " must be an integer" : " must be a number"));
  const double x = v->is_number_unsigned() ? static_cast<double>(v->get<uint64_t>()) : v->get<double>();
  auto named = [&](const Status& s) { return bad_request(key, alias ? str_cat(key, ": ", s.message()) : s.message()); };
  if (Status s = check_field(f, x, context); !s.ok()) return named(s);
  out = static_cast<T>(x);
  // A tiny positive value may round to an open bound's 0.
  if (Status s = check_field(f, static_cast<double>(out), context); !s.ok()) return named(s);
  return std::nullopt;
}

OptError read_bool(const json& j, const char* key, bool& out) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return bad_request(key, str_cat(key, " must be true or false"));
  out = v->get<bool>();
  return std::nullopt;
}

OptError read_string(const json& j, const char* key, size_t max_bytes, std::string& out) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) return bad_request(key, str_cat(key, " must be a string"));
  out = v->get<std::string>();
  if (Status s = check_text_bytes(key, out, max_bytes); !s.ok()) return bad_request(key, s.message());
  return std::nullopt;
}

OptError check_prompt_length(size_t num_tokens, const ApiLimits& limits) {
  if (num_tokens == 0) return bad_request("prompt", "prompt must not be empty");
  if (num_tokens >= static_cast<size_t>(limits.max_seq_len))
    return bad_request("prompt",
               str_cat("prompt: ", num_tokens, " tokens do not fit the context of ", limits.max_seq_len,
                       " tokens (max_model_len), which must also hold at least one new token"),
               "context_length_exceeded");
  return std::nullopt;
}

// vLLM's answer to a prompt plus max_tokens beyond the context (it used to
// be cut short with finish_reason "length").
OptError check_room(size_t num_tokens, int32_t max_tokens, const ApiLimits& limits, const char* what) {
  const int64_t wanted = int64_t(num_tokens) + max_tokens;
  if (wanted <= limits.max_seq_len) return std::nullopt;
  return bad_request("max_tokens",
                     str_cat("This model's maximum context length is ", limits.max_seq_len,
                             " tokens. However, you requested ", wanted, " tokens (", num_tokens, " in the ", what,
                             ", ", max_tokens, " in the completion). Please reduce the length of the ", what,
                             " or completion."),
                     "context_length_exceeded");
}

// The most bytes of prompt text read for the context: longer text cannot
// tokenize into it, and is refused unread.
int64_t prompt_byte_limit(const ApiLimits& limits) {
  return limits.max_prompt_bytes > 0 ? limits.max_prompt_bytes : int64_t(limits.max_seq_len) * kMaxPromptBytesPerToken;
}

OptError check_prompt_bytes(const char* field, size_t num_bytes, const ApiLimits& limits) {
  const int64_t most = prompt_byte_limit(limits);
  if (int64_t(num_bytes) <= most) return std::nullopt;
  return bad_request(field,
             str_cat(field, ": ", num_bytes, " bytes of text cannot fit the context of ", limits.max_seq_len,
                     " tokens (max_model_len); at most ", most, " bytes are read"),
             "context_length_exceeded");
}

// A JSON list of token ids the request names `field` (the caller checked it
// is a list), appended to out.
OptError read_id_list(const json& list, const char* field, const ApiLimits& limits, std::vector<int32_t>& out) {
  out.reserve(out.size() + list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& v = list[i];
    if (!v.is_number_integer()) return bad_request(field, str_cat(field, ": item ", i, " is not an integer id"));
    int64_t id = v.is_number_unsigned() ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
                                        : v.get<int64_t>();
    if (Status s = check_token_id(field, id, i, limits.vocab_size); !s.ok()) return bad_request(field, s.message());
    out.push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

OptError read_token_ids(const json& list, const ApiLimits& limits, std::vector<int32_t>& out) {
  if (OptError e = read_id_list(list, "prompt", limits, out)) return e;
  return check_prompt_length(out.size(), limits);
}

OptError add_prompt(const json& p, const Tokenizer& tokenizer, const ApiLimits& limits,
                    std::vector<std::vector<int32_t>>& out) {
  std::vector<int32_t> ids;
  if (p.is_string()) {
    const std::string& text = p.get_ref<const std::string&>();
    if (text.empty()) return bad_request("prompt", "prompt must not be empty");
    if (OptError e = check_prompt_bytes("prompt", text.size(), limits)) return e;
    ids = tokenizer.encode(text);
    if (OptError e = check_prompt_length(ids.size(), limits)) return e;
  } else if (p.is_array()) {
    if (OptError e = read_token_ids(p, limits, ids)) return e;
  } else {
    return bad_request("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of token id lists");
  }
  out.push_back(std::move(ids));
  return std::nullopt;
}

OptError read_prompts(const json& j, const Tokenizer& tokenizer, const ApiLimits& limits,
                      std::vector<std::vector<int32_t>>& out) {
  const json* p = find(j, "prompt");
  if (!p) return bad_request("prompt", "prompt is required");
  if (!p->is_array() || (!p->empty() && (*p)[0].is_number())) return add_prompt(*p, tokenizer, limits, out);
  if (p->empty()) return bad_request("prompt", "prompt must not be empty");
  if (p->size() > static_cast<size_t>(limits.max_choices))
    return bad_request("prompt", str_cat("prompt may hold at most ", limits.max_choices, " prompts, got ", p->size()));
  for (const json& item : *p) {
    if (!item.is_string() && !item.is_array())
      return bad_request("prompt", "prompt must be a string, a list of strings, a list of token ids or a list of token id lists");
    if (OptError e = add_prompt(item, tokenizer, limits, out)) return e;
  }
  return std::nullopt;
}

OptError read_stop(const json& j, const ApiLimits& limits, std::vector<std::string>& out) {
  const json* v = find(j, "stop");
  if (!v) return std::nullopt;
  if (!v->is_string() && !v->is_array()) return bad_request("stop", "stop must be a string or a list of strings");
  if (v->is_array() && v->size() > static_cast<size_t>(limits.max_stop_strings))
    return bad_request("stop", str_cat("stop may hold at most ", limits.max_stop_strings, " strings, got ", v->size()));
  auto add = [&](const json& s) -> OptError {
    if (!s.is_string()) return bad_request("stop", "stop must be a string or a list of strings");
    const std::string& text = s.get_ref<const std::string&>();
    if (Status e = check_text_bytes("stop", text, kMaxStopBytes); !e.ok()) return bad_request("stop", e.message());
    if (!text.empty()) out.push_back(text);
    return std::nullopt;
  };
  if (v->is_string()) return add(*v);
  for (const json& s : *v)
    if (OptError e = add(s)) return e;
  return std::nullopt;
}

// OpenAI's logit_bias: {"token id": bias in [-100, 100], ...}, sorted by id
// and checked as Engine::submit checks it (check_logit_bias), here to name
// the parameter; each bias also before it becomes a float, which would
// round 100 + 1e-9 to 100.
OptError read_logit_bias(const json& j, const ApiLimits& limits, std::vector<LogitBias>& out) {
  const json* bias = find(j, "logit_bias");
  if (!bias || bias->is_null()) return std::nullopt;
  if (!bias->is_object()) return bad_request("logit_bias", "logit_bias must be an object of token id -> bias");
  for (const auto& [key, value] : bias->items()) {
    int32_t id = -1;  // out of int32 range: not a token id either
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    if (ec != std::errc() || end != key.data() + key.size())
      return bad_request("logit_bias", str_cat("logit_bias: key \"", key, "\" is not a token id"));
    if (!value.is_number()) return bad_request("logit_bias", str_cat("logit_bias[\"", key, "\"] must be a number"));
    const double x = value.get<double>();
    if (Status s = check_field(field::kLogitBias, x); !s.ok())
      return bad_request("logit_bias", str_cat("logit_bias[\"", key, "\"]: ", s.message()));
    out.push_back({id, static_cast<float>(x)});
  }
  std::sort(out.begin(), out.end(), [](const LogitBias& a, const LogitBias& b) { return a.id < b.id; });
  if (Status s = check_logit_bias(out, limits.vocab_size); !s.ok()) return bad_request("logit_bias", s.message());
  return std::nullopt;
}

OptError read_sampling(const json& j, const ApiLimits& limits, CompletionRequest& out) {
  SamplingParams& s = out.sampling;
  if (OptError e = read_field(j, field::kTemperature, s.temperature)) return e;
  if (OptError e = read_field(j, field::kTopP, s.top_p)) return e;
  if (OptError e = read_field(j, field::kTopK, s.top_k)) return e;
  if (OptError e = read_field(j, field::kMinP, s.min_p)) return e;
  if (OptError e = read_field(j, field::kPresencePenalty, s.presence_penalty)) return e;
  if (OptError e = read_field(j, field::kFrequencyPenalty, s.frequency_penalty)) return e;
  if (OptError e = read_field(j, field::kRepetitionPenalty, s.repetition_penalty)) return e;
  if (const json* seed = find(j, "seed")) {
    if (!seed->is_number_integer()) return bad_request("seed", "seed must be an integer");
    s.has_seed = true;
    s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (find(j, "logprobs")) {
    out.want_logprobs = true;
    s.return_logprob = true;  // logprobs: 0 still wants the chosen token's logprob
    if (OptError e = read_field(j, field::kTopLogprobs, s.num_top_logprobs)) return e;
  }
  return read_logit_bias(j, limits, s.logit_bias);
}

// vLLM's stop_token_ids: ids that end the output (not in its text), even
// with ignore_eos.
OptError read_stop_token_ids(const json& j, const ApiLimits& limits, CompletionRequest& out) {
  const json* ids = find(j, "stop_token_ids");
  if (!ids || ids->is_null()) return std::nullopt;
  if (!ids->is_array()) return bad_request("stop_token_ids", "stop_token_ids must be a list of token ids");
  if (ids->size() > kMaxStopTokenIds)
    return bad_request("stop_token_ids", str_cat("stop_token_ids may hold at most ", kMaxStopTokenIds, " ids"));
  if (OptError e = read_id_list(*ids, "stop_token_ids", limits, out.stop_token_ids)) return e;
  out.num_requested_stop_ids = out.stop_token_ids.size();
  return std::nullopt;
}

// Fields of vLLM's and llama-server's that would change the output and are
// not implemented: a value other than the field's no-op (what their clients
// send by default) is a 400 naming it, never a silent 200.
OptError reject_unimplemented(const json& j) {
  struct Unimplemented {
    const char* name;
    bool (*is_noop)(const json&);
  };
  static constexpr auto null_or_empty = [](const json& v) { return v.is_null() || (v.is_array() && v.empty()); };
  static constexpr auto zero = [](const json& v) { return v.is_null() || (v.is_number() && v.get<double>() == 0.0); };
  static constexpr auto one = [](const json& v) { return v.is_null() || (v.is_number() && v.get<double>() == 1.0); };
  static constexpr auto falsy = [](const json& v) { return v.is_null() || (v.is_boolean() && !v.get<bool>()); };
  static constexpr Unimplemented kFields[] = {
      {"min_tokens", zero},          {"bad_words", null_or_empty},   {"allowed_token_ids", null_or_empty},
      {"prompt_logprobs", zero},     {"truncate_prompt_tokens", null_or_empty}, {"use_beam_search", falsy},
      {"length_penalty", one},       {"logits_processors", null_or_empty}, {"typical_p", one},
      {"mirostat", zero},            {"dry_multiplier", zero},        {"xtc_probability", zero},
      {"tfs_z", one}};
  for (const Unimplemented& field : kFields)
    if (const json* v = find(j, field.name); v && !field.is_noop(*v))
      return bad_request(field.name, str_cat(field.name, " is not supported by this server"));
  return std::nullopt;
}

// Fields OpenAI defines that zerolayer does not implement get a clear 400
// rather than being silently ignored.
OptError reject_unsupported(const json& j, int32_t n) {
  if (const json* echo = find(j, "echo")) {
    if (!echo->is_boolean()) return bad_request("echo", "echo must be true or false");
    if (echo->get<bool>() && find(j, "logprobs"))
      return bad_request("echo", "echo with logprobs would need the prompt's logprobs, which are not served");
  }
  if (const json* best_of = find(j, "best_of"))
    if (!best_of->is_number_integer() || best_of->get<int64_t>() != n)
      return bad_request("best_of", "best_of is not supported (only best_of == n)");
  if (const json* suffix = find(j, "suffix"); suffix && !suffix->is_null() && !suffix->is_string())
    return bad_request("suffix", "suffix must be a string");
  return std::nullopt;
}

OptError read_stream(const json& j, CompletionRequest& out) {
  if (OptError e = read_bool(j, "stream", out.stream)) return e;
  const json* options = find(j, "stream_options");
  if (!options) return std::nullopt;
  if (!options->is_object()) return bad_request("stream_options", "stream_options must be an object");
  if (!out.stream) return bad_request("stream_options", "stream_options is only allowed with stream=true");
  if (const json* usage = find(*options, "include_usage")) {
    if (!usage->is_boolean()) return bad_request("stream_options.include_usage", "stream_options.include_usage must be true or false");
    out.include_usage = usage->get<bool>();
  }
  if (const json* usage = find(*options, "continuous_usage_stats")) {
    if (!usage->is_boolean())
      return bad_request("stream_options.continuous_usage_stats", "stream_options.continuous_usage_stats must be true or false");
    out.continuous_usage = usage->get<bool>();
  }
  return std::nullopt;
}

// Fields no code here reads (user, metadata, store, service_tier,
// parallel_tool_calls, a client's own extensions) change nothing: accepted,
// as vLLM does, and logged once each (at most 256 names, a hostile client
// cannot grow the set).
void note_ignored_fields(const json& j) {
  static const std::set<std::string, std::less<>> kRead = {
      "model", "prompt", "messages", "n", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
      "min_p", "seed", "stop", "presence_penalty", "frequency_penalty", "repetition_penalty", "logprobs",
      "top_logprobs", "ignore_eos", "include_stop_str_in_output", "skip_special_tokens", "stream", "stream_options", "cache_salt", "priority", "min_token_prob",
      "return_token_ids", "echo", "best_of", "suffix", "logit_bias", "stop_token_ids", "response_format", "structured_outputs",
      "guided_json", "guided_regex", "guided_choice", "guided_grammar", "json_schema", "grammar", "tools",
      "tool_choice", "chat_template_kwargs", "add_generation_prompt", "continue_final_message"};
  static std::mutex mutex;
  static std::set<std::string, std::less<>> logged;
  for (const auto& [key, value] : j.items()) {
    if (kRead.count(key)) continue;
    std::lock_guard<std::mutex> lock(mutex);
    if (logged.size() >= 256 || !logged.insert(key).second) continue;
    log_info("http: request field '", key.substr(0, 64), "' changes nothing here and is ignored (logged once)");
  }
}

// The fields /v1/completions and /v1/chat/completions share: all but the prompt.
OptError parse_common_fields(const json& j, const ApiLimits& limits, CompletionRequest& out) {
  if (OptError e = read_string(j, "model", 1024, out.model)) return e;
  if (OptError e = read_field(j, field::kN, out.n)) return e;
  if (OptError e = read_field(j, field::kMaxTokens, out.max_tokens, limits.max_seq_len)) return e;
  if (OptError e = reject_unsupported(j, out.n)) return e;
  if (OptError e = read_sampling(j, limits, out)) return e;
  if (OptError e = read_stop(j, limits, out.stop)) return e;
  if (OptError e = read_stop_token_ids(j, limits, out)) return e;
  if (OptError e = reject_unimplemented(j)) return e;
  if (OptError e = read_bool(j, "ignore_eos", out.ignore_eos)) return e;
  if (OptError e = read_bool(j, "include_stop_str_in_output", out.include_stop_str)) return e;
  if (OptError e = read_bool(j, "skip_special_tokens", out.skip_special_tokens)) return e;
  if (OptError e = read_stream(j, out)) return e;
  if (OptError e = read_string(j, "cache_salt", kMaxCacheSaltBytes, out.cache_salt)) return e;
  if (OptError e = read_field(j, field::kPriority, out.priority)) return e;
  if (OptError e = read_field(j, field::kMinTokenProb, out.min_token_prob)) return e;
  if (OptError e = read_bool(j, "return_token_ids", out.return_token_ids)) return e;
  if (OptError e = read_structured_output(j, out.structured_output)) return e;
  note_ignored_fields(j);
  return std::nullopt;
}

// A prompt with a suffix (server/fill_in_middle.h): one text prompt, on a
// vocabulary with fill-in-the-middle tokens; the text goes between them.
OptError read_fill_in_middle(const json& j, const std::string& suffix, const Tokenizer& tokenizer,
                             const ApiLimits& limits, CompletionRequest& out) {
  const std::optional<FimTokens> fim = find_fim_tokens(tokenizer);
  if (!fim)
    return bad_request("suffix", "suffix needs a model whose vocabulary has fill-in-the-middle tokens "
                                 "(<|fim_prefix|>, <fim_prefix>, ...); this one has none");
  if (out.echo) return bad_request("suffix", "suffix and echo cannot be used together");
  const json* p = find(j, "prompt");
  if (p && p->is_array() && p->size() == 1) p = &(*p)[0];
  if (!p || !p->is_string()) return bad_request("suffix", "suffix needs the prompt as one text");
  const std::string& prefix = p->get_ref<const std::string&>();
  if (OptError e = check_prompt_bytes("prompt", prefix.size() + suffix.size(), limits)) return e;
  std::vector<int32_t> ids = fill_in_middle_prompt(tokenizer, *fim, prefix, suffix);
  if (OptError e = check_prompt_length(ids.size(), limits)) return e;
  out.prompts.push_back(std::move(ids));
  return std::nullopt;
}

OptError parse_fields(const json& j, const Tokenizer& tokenizer, const ApiLimits& limits, CompletionRequest& out) {
  if (OptError e = parse_common_fields(j, limits, out)) return e;
  if (OptError e = read_bool(j, "echo", out.echo)) return e;
  // The prompt last: tokenizing is the expensive part, done once the cheap checks passed.
  const json* suffix = find(j, "suffix");
  if (suffix && suffix->is_string() && !suffix->get_ref<const std::string&>().empty()) {
    if (OptError e = read_fill_in_middle(j, suffix->get_ref<const std::string&>(), tokenizer, limits, out)) return e;
  } else if (OptError e = read_prompts(j, tokenizer, limits, out.prompts)) {
    return e;
  }
  if (out.prompts.size() * static_cast<size_t>(out.n) > static_cast<size_t>(limits.max_choices))
    return bad_request("n", str_cat("prompts x n must be at most ", limits.max_choices));
  for (const std::vector<int32_t>& prompt : out.prompts)
    if (OptError e = check_room(prompt.size(), out.max_tokens, limits, "prompt")) return e;
  return std::nullopt;
}

using ojson = nlohmann::ordered_json;

OptError bad_message(std::string message) { return bad_request("messages", std::move(message)); }

// One message's content: a string, null (an assistant turn with tool_calls),
// or a list of {"type": "text", "text": ...} parts, joined with "\n".
OptError normalize_content(ojson& message, size_t i, const std::string& role) {
  std::string where = str_cat("messages[", i, "].content");
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    if (role == "assistant") return std::nullopt;
    return bad_message(where + " is required for role '" + role + "'");
  }
  if (it->is_string()) return std::nullopt;
  if (!it->is_array()) return bad_message(where + " must be a string or a list of text parts");
  std::string text;
  for (size_t k = 0; k < it->size(); ++k) {
    const ojson& part = (*it)[k];
    std::string at = str_cat(where, "[", k, "]");
    if (!part.is_object()) return bad_message(at + " must be an object {\"type\": \"text\", \"text\": ...}");
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return bad_message(at + ".type must be a string");
    if (*type != "text")
      return bad_message(at + ".type '" + type->get<std::string>() + "' is not supported; only \"text\" parts are");
    auto t = part.find("text");
    if (t == part.end() || !t->is_string()) return bad_message(at + ".text must be a string");
    if (k > 0) text += "\n";
    text += t->get_ref<const std::string&>();
  }
  *it = std::move(text);
  return std::nullopt;
}

// Validates the conversation and the template's options of a chat body.
OptError read_chat(const ojson& j, const ChatSettings& chat, ojson& messages, ChatTemplateOptions& options) {
  auto m = j.find("messages");
  if (m == j.end() || m->is_null()) return bad_message("messages is required");
  if (!m->is_array() || m->empty()) return bad_message("messages must be a non-empty list of messages");
  messages = ojson::array();
  for (size_t i = 0; i < m->size(); ++i) {
    ojson message = (*m)[i];
    if (!message.is_object()) return bad_message(str_cat("messages[", i, "] must be an object"));
    auto role = message.find("role");
    if (role == message.end() || !role->is_string()) return bad_message(str_cat("messages[", i, "].role must be a string"));
    std::string r = role->get<std::string>();
    if (r == "developer") message["role"] = r = "system";  // OpenAI's newer name; templates know system
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      return bad_message(
          str_cat("messages[", i, "].role '", r, "' is unknown; use system, developer, user, assistant or tool"));
    if (OptError e = normalize_content(message, i, r)) return e;
    if (OptError e = normalize_tool_calls(message, i, chat.loaded)) return e;
    messages.push_back(std::move(message));
  }
  if (auto tools = j.find("tools"); tools != j.end() && !tools->is_null()) {
    if (!tools->is_array()) return bad_request("tools", "tools must be a list of tool definitions");
    for (const ojson& tool : *tools)
      if (!tool.is_object()) return bad_request("tools", "tools must be a list of objects");
    if (!tools->empty()) options.tools = *tools;
  }
  if (auto kwargs = j.find("chat_template_kwargs"); kwargs != j.end() && !kwargs->is_null()) {
    if (!kwargs->is_object()) return bad_request("chat_template_kwargs", "chat_template_kwargs must be an object");
    options.extra = *kwargs;
  }
  if (auto choice = j.find("tool_choice"); choice != j.end() && !choice->is_null()) {
    if (!choice->is_string() && !choice->is_object())
      return bad_request("tool_choice", "tool_choice must be a string or an object");
    options.extra["tool_choice"] = *choice;
  }
  if (auto add = j.find("add_generation_prompt"); add != j.end() && !add->is_null()) {
    if (!add->is_boolean()) return bad_request("add_generation_prompt", "add_generation_prompt must be true or false");
    options.add_generation_prompt = add->get<bool>();
  }
  if (auto cont = j.find("continue_final_message"); cont != j.end() && !cont->is_null()) {
    if (!cont->is_boolean())
      return bad_request("continue_final_message", "continue_final_message must be true or false");
    options.continue_final_message = cont->get<bool>();
    // vLLM's rule: a prompt cannot both open a new turn and continue the last.
    if (options.continue_final_message && options.add_generation_prompt)
      return bad_request("continue_final_message",
                         "continue_final_message needs add_generation_prompt: false (both cannot hold)");
  }
  if (!chat.loaded.chat_template)
    return bad_request("", chat.missing_message.empty() ? "the model has no chat template" : chat.missing_message,
               "chat_template_missing");
  return std::nullopt;
}

OptError parse_ordered(std::string_view body, ojson& out) {
  try {
    out = ojson::parse(body.begin(), body.end());
  } catch (const std::exception& e) {
    return bad_request("", std::string("the request body is not valid JSON: ") + e.what(), "invalid_json");
  }
  return std::nullopt;
}

// The reasoning split of a chat request with a reasoning parser. Under a
// grammar, the prompt decides: one that opens the reasoning (R1's, QwQ's
// "<think>") gets the grammar from the token after the reasoning's end, as
// vLLM applies it; otherwise the grammar holds from the first token and
// there is no reasoning (an output that might or might not open with
// <think>, as Qwen3's, then always validates).
void choose_reasoning(const json& j, const ChatSettings& chat, const Tokenizer& tokenizer, std::string_view prompt,
                      CompletionRequest& out) {
  if (!chat.reasoning_format) return;
  const ReasoningFormat format = *chat.reasoning_format;
  const bool opened = prompt_opens_reasoning(format, prompt);
  StructuredOutput& grammar = out.structured_output;
  if (grammar.kind != StructuredOutput::Kind::kNone) {
    if (!opened) return;
    grammar.after_ids = tokenizer.encode(reasoning_close_tag(format), /*add_special=*/false, /*parse_special=*/true);
    if (grammar.after_ids.empty()) return;
  }
  out.reasoning = format;
  out.reasoning_opened = opened;
  // Command R's and harmony's markers are special tokens: the splitter reads them.
  if (marked_by_special_tokens(format) && !j.contains("skip_special_tokens")) out.skip_special_tokens = false;
}

// j: the body; ordered: the same with its objects' key order (tool schemas
// keep theirs for the template's tojson).
OptError parse_chat_fields(const ojson& ordered, json& j, const Tokenizer& tokenizer, const ApiLimits& limits,
                           const ChatSettings& chat, CompletionRequest& out, std::string* rendered) {
  out.chat = true;
  // Chat's logprobs is a boolean, with top_logprobs the count, not completions' count.
  bool want_logprobs = false;
  if (const json* logprobs = find(j, "logprobs")) {
    if (!logprobs->is_boolean()) return bad_request("logprobs", "logprobs must be true or false");
    want_logprobs = logprobs->get<bool>();
    j.erase("logprobs");
  }
  if (find(j, "top_logprobs") && !want_logprobs)
    return bad_request("top_logprobs", "top_logprobs needs logprobs: true");
  bool has_max = find(j, "max_tokens") || find(j, "max_completion_tokens");
  if (OptError e = parse_common_fields(j, limits, out)) return e;
  if (want_logprobs) {
    out.want_logprobs = out.sampling.return_logprob = true;
    if (OptError e = read_field(j, field::kTopLogprobs, out.sampling.num_top_logprobs, 0, "top_logprobs")) return e;
  }
  if (OptError e = read_field(j, field::kMaxTokens, out.max_tokens, limits.max_seq_len, "max_completion_tokens"))
    return e;
  if (out.n > limits.max_choices) return bad_request("n", str_cat("n must be at most ", limits.max_choices));
  ojson messages;
  ChatTemplateOptions options;
  if (OptError e = read_chat(ordered, chat, messages, options)) return e;
  if (OptError e = read_tool_choice(ordered, chat, out)) return e;
  // vLLM's chat echo: a final assistant message (one being continued) comes
  // back before the new text.
  if (OptError e = read_bool(j, "echo", out.echo)) return e;
  if (out.echo && messages.back()["role"] == "assistant" && messages.back()["content"].is_string())
    out.chat_echo = messages.back()["content"].get<std::string>();
  StatusOr<ChatPrompt> prompt =
      render_chat_prompt(chat.loaded, tokenizer, messages, options, size_t(prompt_byte_limit(limits)));
  if (!prompt.ok()) {
    const Status& s = prompt.status();
    if (s.code() == StatusCode::kOutOfRange) return bad_request("messages", s.message(), "context_length_exceeded");
    return bad_message(s.message());
  }
  std::vector<int32_t>& ids = prompt->ids;
  if (ids.size() >= static_cast<size_t>(limits.max_seq_len))
    return bad_request("messages",
               str_cat("messages: ", ids.size(), " prompt tokens do not fit the context of ", limits.max_seq_len,
                       " tokens (max_model_len), which must also hold at least one new token"),
               "context_length_exceeded");
  // OpenAI's chat default: as many tokens as the context leaves.
  if (!has_max) out.max_tokens = limits.max_seq_len - static_cast<int32_t>(ids.size());
  if (OptError e = check_room(ids.size(), out.max_tokens, limits, "messages")) return e;
  out.prompts.push_back(std::move(ids));
  add_end_of_turn_stops(chat.loaded, out.ignore_eos, out.stop_token_ids);
  choose_reasoning(j, chat, tokenizer, prompt->text, out);
  if (rendered) *rendered = std::move(prompt->text);
  return std::nullopt;
}

}  // namespace

ApiError bad_request(std::string param, std::string message, std::string code) {
  ApiError e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

std::optional<ApiError> parse_completion_request(std::string_view body, const Tokenizer& tokenizer,
                                                 const ApiLimits& limits, CompletionRequest& out) {
  json j;
  if (OptError e = parse_object(body, j)) return e;
  try {
    return parse_fields(j, tokenizer, limits, out);
  } catch (const std::exception& e) {  // a type slip in a helper must not cross the module boundary
    return bad_request("", std::string("invalid request: ") + e.what());
  }
}

std::optional<ApiError> parse_chat_request(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                           const ChatSettings& chat, CompletionRequest& out, std::string* rendered) {
  json j;
  if (OptError e = parse_object(body, j)) return e;
  try {
    ojson ordered;
    if (OptError e = parse_ordered(body, ordered)) return e;
    return parse_chat_fields(ordered, j, tokenizer, limits, chat, out, rendered);
  } catch (const std::exception& e) {
    return bad_request("", std::string("invalid request: ") + e.what());
  }
}

std::optional<ApiError> parse_chat_object(const ojson& body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                          const ChatSettings& chat, CompletionRequest& out) {
  if (!body.is_object()) return bad_request("", "the request body must be a JSON object");
  try {
    json j(body);
    return parse_chat_fields(body, j, tokenizer, limits, chat, out, nullptr);
  } catch (const std::exception& e) {
    return bad_request("", std::string("invalid request: ") + e.what());
  }
}

std::optional<ApiError> apply_template_body(std::string_view body, const ChatSettings& chat, std::string& out) {
  json j;
  if (OptError e = parse_object(body, j)) return e;
  try {
    ojson ordered, messages;
    if (OptError e = parse_ordered(body, ordered)) return e;
    ChatTemplateOptions options;
    if (OptError e = read_chat(ordered, chat, messages, options)) return e;
    StatusOr<std::string> text = render_chat_text(chat.loaded, messages, options);
    if (!text.ok()) return bad_message(text.status().message());
    out = json_text(json{{"prompt", *text}});
    return std::nullopt;
  } catch (const std::exception& e) {
    return bad_request("", std::string("invalid request: ") + e.what());
  }
}

Request make_engine_request(const CompletionRequest& r, size_t prompt_index, int32_t choice_index) {
  Request request;
  request.prompt_ids = r.prompts[prompt_index];
  request.sampling = r.sampling;
  if (r.sampling.has_seed) request.sampling.seed = r.sampling.seed + static_cast<uint64_t>(choice_index);
  request.max_new_tokens = r.max_tokens;
  request.stop = r.stop;
  request.stop_token_ids = r.stop_token_ids;
  request.ignore_eos = r.ignore_eos;
  request.skip_special_tokens = r.skip_special_tokens;
  request.cache_salt = r.cache_salt;
  request.priority = r.priority;
  request.min_token_prob = r.min_token_prob;
  request.structured_output = r.structured_output;  // the compiled grammar is shared
  return request;
}

ApiError submit_error(const Status& status) {
  const std::string& m = status.message();
  size_t end = 0;
  while (end < m.size() && (std::isalnum(static_cast<unsigned char>(m[end])) || m[end] == '_')) ++end;
  std::string param = m.substr(0, end);
  if (param == "max_new_tokens") param = "max_tokens";
  if (param == "the" || param == "request") param = "";
  switch (status.code()) {
    case StatusCode::kOutOfRange:
      return bad_request(param.empty() ? "prompt" : param, m, "context_length_exceeded");
    case StatusCode::kResourceExhausted:
      if (m.find("waiting queue") != std::string::npos) {
        ApiError e = bad_request("", m, "queue_full");
        e.http_status = 503;
        e.type = "server_error";
        return e;
      }
      return bad_request("max_tokens", m, "kv_cache_exceeded");
    case StatusCode::kInvalidArgument:
      return bad_request(param, m);
    default: {
      ApiError e = bad_request("", m);
      e.http_status = 500;
      e.type = "server_error";
      return e;
    }
  }
}

std::optional<ApiError> tokenize_body(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                      const ChatSettings& chat, std::string& out) {
  json j;
  if (OptError e = parse_object(body, j)) return e;
  // vLLM's two forms: a prompt, or chat messages rendered through the template.
  // By default the ids are those the chat route runs on: bos added unless the
  // template wrote it (render_chat_prompt).
  std::string text;
  const bool is_chat = find(j, "messages") != nullptr;
  if (is_chat) {
    if (OptError e = apply_template_body(body, chat, text)) return e;
    text = json::parse(text)["prompt"].get<std::string>();
  } else {
    const json* prompt = find(j, "prompt");
    if (!prompt) return bad_request("prompt", "prompt or messages is required");
    if (!prompt->is_string()) return bad_request("prompt", "prompt must be a string");
    text = prompt->get<std::string>();
  }
  bool add_special = !is_chat || !template_wrote_bos(chat.loaded, text);
  if (OptError e = read_bool(j, "add_special_tokens", add_special)) return e;
  std::vector<int32_t> ids = tokenizer.encode(text, add_special);
  out = json_text(json{{"tokens", ids}, {"count", ids.size()}, {"max_model_len", limits.max_seq_len}});
  return std::nullopt;
}

std::optional<ApiError> detokenize_body(std::string_view body, const Tokenizer& tokenizer, const ApiLimits& limits,
                                        std::string& out) {
  json j;
  if (OptError e = parse_object(body, j)) return e;
  const json* tokens = find(j, "tokens");
  if (!tokens) return bad_request("tokens", "tokens is required");
  if (!tokens->is_array()) return bad_request("tokens", "tokens must be a list of token ids");
  std::vector<int32_t> ids;
  if (OptError e = read_id_list(*tokens, "tokens", limits, ids)) return e;
  out = json_text(json{{"prompt", tokenizer.decode(ids, false)}});
  return std::nullopt;
}

}  // namespace zl::server
