#include "server/chat_tools.h"

#include <string>

#include "server/tool_calls.h"

namespace zl::server {
namespace {

using ojson = nlohmann::ordered_json;
using OptError = std::optional<ApiError>;

// Each tool {"type": "function", "function": {"name": non-empty, "parameters": object?}}.
OptError check_tools(const ojson& tools) {
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& tool = tools[i];
    const std::string at = str_cat("tools[", i, "]");
    if (tool.value("type", "") != "function") return bad_request("tools", at + ".type must be \"function\"");
    const auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) return bad_request("tools", at + ".function must be an object");
    const auto name = function->find("name");
    if (name == function->end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      return bad_request("tools", at + ".function.name must be a non-empty string");
    const auto params = function->find("parameters");
    if (params != function->end() && !params->is_null() && !params->is_object())
      return bad_request("tools", at + ".function.parameters must be a JSON schema (an object)");
  }
  return std::nullopt;
}

bool has_tool(const ojson& tools, const std::string& name) {
  for (const ojson& tool : tools)
    if (tool["function"]["name"] == name) return true;
  return false;
}

}  // namespace

OptError normalize_tool_calls(ojson& message, size_t i, const LoadedChatTemplate& chat) {
  if (const auto found = message.find("tool_calls"); found == message.end() || found->is_null()) return std::nullopt;
  const std::string where = str_cat("messages[", i, "].tool_calls");
  if (!message["tool_calls"].is_array()) return bad_request("messages", where + " must be a list");
  // OpenAI's clients send content null (or none) beside tool_calls;
  // templates read it as a string (Qwen3's: '</think>' in message.content).
  // Added before `calls` is taken: an ordered_json object is a vector, and
  // a new member moves the others (the fuzzer found the dangling reference).
  if (!message.contains("content") || message["content"].is_null()) message["content"] = chat.null_content ? ojson() : ojson("");
  ojson* calls = &message["tool_calls"];
  for (size_t k = 0; k < calls->size(); ++k) {
    ojson& call = (*calls)[k];
    const auto function = call.find("function");
    if (!call.is_object() || function == call.end() || !function->is_object() || !function->contains("name"))
      return bad_request("messages", str_cat(where, "[", k, "] must be {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}"));
    const auto args = function->find("arguments");
    if (args == function->end()) continue;
    if (!chat.object_arguments) {  // the template wants the JSON text
      if (args->is_object()) *args = args->dump();
      continue;
    }
    if (!args->is_string()) continue;
    ojson parsed = ojson::parse(args->get_ref<const std::string&>(), nullptr, false);
    if (parsed.is_object()) *args = std::move(parsed);
  }
  return std::nullopt;
}

OptError read_tool_choice(const ojson& body, const ChatSettings& chat, CompletionRequest& out) {
  const auto tools_it = body.find("tools");
  const ojson tools = tools_it != body.end() && tools_it->is_array() ? *tools_it : ojson::array();
  if (OptError e = check_tools(tools)) return e;
  std::string mode = tools.empty() ? "none" : "auto", only;
  if (const auto choice = body.find("tool_choice"); choice != body.end() && !choice->is_null()) {
    if (choice->is_string()) {
      mode = choice->get<std::string>();
      if (mode != "none" && mode != "auto" && mode != "required")
        return bad_request("tool_choice", "tool_choice '" + mode + "' is unknown; use none, auto, required or a function");
    } else {
      const auto function = choice->find("function");
      if (choice->value("type", "") != "function" || function == choice->end() || !function->is_object() ||
          !function->contains("name") || !(*function)["name"].is_string())
        return bad_request("tool_choice", "tool_choice must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}");
      mode = "function";
      only = (*function)["name"].get<std::string>();
      if (!has_tool(tools, only)) return bad_request("tool_choice", "tool_choice names '" + only + "', which is not among the tools");
    }
    if (mode != "none" && tools.empty()) return bad_request("tool_choice", "tool_choice '" + mode + "' needs tools");
  }
  if (mode == "none") return std::nullopt;
  if (!chat.tool_format) {
    if (mode == "auto") return std::nullopt;  // the template sees the tools; the output stays text
    return bad_request("tool_choice", "tool_choice '" + mode + "' needs a tool-call syntax, and this chat template has none "
                              "this server knows; start it with --tool-call-parser (" + tool_call_format_names() + ")");
  }
  out.tool_format = chat.tool_format;
  if (marked_by_special_tokens(*chat.tool_format) && !body.contains("skip_special_tokens"))
    out.skip_special_tokens = false;
  if (mode == "auto") return std::nullopt;
  if (out.structured_output.kind != StructuredOutput::Kind::kNone)
    return bad_request("tool_choice", "tool_choice '" + mode + "' and " + out.structured_output.field +
                                  " both constrain the output; send one");
  out.structured_output.kind = StructuredOutput::Kind::kStructuralTag;
  out.structured_output.field = "tool_choice";
  out.structured_output.spec = tool_call_structural_tag(*chat.tool_format, tools, only);
  return std::nullopt;
}

}  // namespace zl::server
