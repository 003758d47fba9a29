// The request fields that constrain the output to a language, read into one
// StructuredOutput (zerolayer/request.h), the same on /v1/completions and
// /v1/chat/completions:
//   response_format     OpenAI: {"type": "text" | "json_object" |
//                       "json_schema", "json_schema": {"name", "schema",
//                       "strict"}}; llama-server's {"type": "json_object",
//                       "schema": {...}} too
//   structured_outputs  vLLM: {"json" | "regex" | "choice" | "grammar" |
//                       "json_object": ...}
//   guided_json, guided_regex, guided_choice, guided_grammar   vLLM's older names
//   json_schema, grammar                                       llama-server's
// At most one may constrain a request. A malformed value is a 400 naming the
// field; a spec that does not compile is one too, from Engine::compile_grammar.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "server/openai_api.h"
#include "zerolayer/request.h"

namespace zl::server {

std::optional<ApiError> read_structured_output(const nlohmann::json& body, StructuredOutput& out);

}  // namespace zl::server
