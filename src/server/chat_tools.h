// tools and tool_choice of a /v1/chat/completions body, resolved against the
// served template's tool-call syntax (ChatSettings::tool_format):
//   "none"                 the template still sees the tools; the output is text
//   "auto" (the default)   text, or calls the parser finds (server/tool_calls.h)
//   "required", or {"type": "function", "function": {"name": N}}
//                          one or more calls (of N), enforced by a grammar
// "required" and a named function need a tool-call syntax (the template's,
// or serve --tool-call-parser) and no other structured output; a name that
// is not among the tools is a 400 naming tool_choice.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "server/openai_api.h"

namespace zl::server {

// An assistant message's tool_calls as templates expect them: OpenAI's
// clients send each function.arguments as JSON text, templates (as
// transformers' do) print it with tojson, so text that parses as an object
// becomes that object, unless the template takes the text; a null or absent
// content becomes "", unless the template wants null (both probed at load:
// LoadedChatTemplate). messages[i] is `message`.
std::optional<ApiError> normalize_tool_calls(nlohmann::ordered_json& message, size_t i, const LoadedChatTemplate& chat);

std::optional<ApiError> read_tool_choice(const nlohmann::ordered_json& body, const ChatSettings& chat,
                                         CompletionRequest& out);

}  // namespace zl::server
