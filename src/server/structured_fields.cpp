#include "server/structured_fields.h"

#include <string>

#include "server/json_text.h"

namespace zl::server {
namespace {

using json = nlohmann::json;
using Kind = StructuredOutput::Kind;
using OptError = std::optional<ApiError>;

// A spec longer than this is refused before compiling: compile time grows
// with it, and no real schema or grammar comes near.
constexpr size_t kMaxSpecBytes = 256 << 10;
constexpr size_t kMaxChoices = 1024;

OptError set_text(Kind kind, const std::string& field, const json& value, StructuredOutput& out) {
  if (!value.is_string()) return bad_request(field, field + " must be a string");
  const std::string& text = value.get_ref<const std::string&>();
  if (text.empty()) return bad_request(field, field + " must not be empty");
  if (text.size() > kMaxSpecBytes) return bad_request(field, str_cat(field, " must be at most ", kMaxSpecBytes, " bytes"));
  out.kind = kind;
  out.spec = text;
  return std::nullopt;
}

// A JSON schema as an object (or, for guided_json, its text).
OptError set_schema(const std::string& field, const json& value, StructuredOutput& out) {
  if (value.is_string()) return set_text(Kind::kJsonSchema, field, value, out);
  if (!value.is_object() && !value.is_boolean()) return bad_request(field, field + " must be a JSON schema (an object)");
  out.kind = Kind::kJsonSchema;
  out.spec = json_text(value);
  if (out.spec.size() > kMaxSpecBytes) return bad_request(field, str_cat(field, " must be at most ", kMaxSpecBytes, " bytes"));
  return std::nullopt;
}

OptError set_choices(const std::string& field, const json& value, StructuredOutput& out) {
  if (!value.is_array() || value.empty() || value.size() > kMaxChoices)
    return bad_request(field, str_cat(field, " must be a list of 1 to ", kMaxChoices, " strings"));
  size_t bytes = 0;
  for (const json& choice : value) {
    if (!choice.is_string() || choice.get_ref<const std::string&>().empty())
      return bad_request(field, field + " must hold non-empty strings");
    bytes += choice.get_ref<const std::string&>().size();
    out.choices.push_back(choice.get<std::string>());
  }
  if (bytes > kMaxSpecBytes) return bad_request(field, str_cat(field, " must be at most ", kMaxSpecBytes, " bytes in all"));
  out.kind = Kind::kChoice;
  return std::nullopt;
}

OptError read_response_format(const json& value, StructuredOutput& out) {
  if (!value.is_object()) return bad_request("response_format", "response_format must be an object");
  const auto type = value.find("type");
  if (type == value.end() || !type->is_string())
    return bad_request("response_format.type", "response_format.type must be \"text\", \"json_object\" or \"json_schema\"");
  const std::string& name = type->get_ref<const std::string&>();
  if (name == "text") return std::nullopt;
  if (name == "json_object") {
    if (const auto schema = value.find("schema"); schema != value.end() && !schema->is_null())
      return set_schema("response_format.schema", *schema, out);
    out.kind = Kind::kJsonObject;
    return std::nullopt;
  }
  if (name == "structural_tag") {  // vLLM's and xgrammar's: {"type": "structural_tag", "format": {...}}
    if (!value.contains("format") || !value["format"].is_object())
      return bad_request("response_format.format", "a structural_tag response_format needs a \"format\" object");
    out.kind = Kind::kStructuralTag;
    out.spec = json_text(value);
    if (out.spec.size() > kMaxSpecBytes) return bad_request("response_format", str_cat("response_format must be at most ", kMaxSpecBytes, " bytes"));
    return std::nullopt;
  }
  if (name != "json_schema")
    return bad_request("response_format.type", "response_format.type '" + name +
                                           "' is not supported; use \"text\", \"json_object\", \"json_schema\" "
                                           "or \"structural_tag\"");
  const auto spec = value.find("json_schema");
  if (spec == value.end() || !spec->is_object())
    return bad_request("response_format.json_schema", "response_format.json_schema must be an object with a \"schema\"");
  if (const auto strict = spec->find("strict"); strict != spec->end() && !strict->is_boolean() && !strict->is_null())
    return bad_request("response_format.json_schema.strict", "response_format.json_schema.strict must be true or false");
  const auto schema = spec->find("schema");
  if (schema == spec->end()) {
    out.kind = Kind::kJsonObject;  // OpenAI: a schema-less json_schema is any JSON object
    return std::nullopt;
  }
  return set_schema("response_format.json_schema.schema", *schema, out);
}

// vLLM's structured_outputs: exactly one of its keys.
OptError read_structured_outputs(const json& value, StructuredOutput& out) {
  const std::string field = "structured_outputs";
  if (!value.is_object()) return bad_request(field, field + " must be an object");
  int set = 0;
  for (const auto& [key, v] : value.items()) {
    if (v.is_null()) continue;
    const std::string name = field + "." + key;
    OptError e;
    if (key == "json") e = set_schema(name, v, out);
    else if (key == "regex") e = set_text(Kind::kRegex, name, v, out);
    else if (key == "choice") e = set_choices(name, v, out);
    else if (key == "grammar") e = set_text(Kind::kGrammar, name, v, out);
    else if (key == "json_object") {
      if (!v.is_boolean()) return bad_request(name, name + " must be true or false");
      if (v.get<bool>()) out.kind = Kind::kJsonObject;
    } else {
      return bad_request(name, name + " is not supported; use json, regex, choice, grammar or json_object");
    }
    if (e) return e;
    if (out.kind != Kind::kNone) ++set;
  }
  if (set > 1) return bad_request(field, field + " must set only one of json, regex, choice, grammar and json_object");
  return std::nullopt;
}

}  // namespace

OptError read_structured_output(const json& body, StructuredOutput& out) {
  const char* kFields[] = {"response_format", "structured_outputs", "guided_json", "guided_regex",
                           "guided_choice",   "guided_grammar",     "json_schema", "grammar"};
  const char* first = nullptr;
  for (const char* field : kFields) {
    const auto it = body.find(field);
    if (it == body.end() || it->is_null()) continue;
    StructuredOutput one;
    one.field = field;
    const std::string name = field;
    OptError e;
    if (name == "response_format") e = read_response_format(*it, one);
    else if (name == "structured_outputs") e = read_structured_outputs(*it, one);
    else if (name == "guided_json" || name == "json_schema") e = set_schema(name, *it, one);
    else if (name == "guided_regex") e = set_text(Kind::kRegex, name, *it, one);
    else if (name == "guided_choice") e = set_choices(name, *it, one);
    else e = set_text(Kind::kGrammar, name, *it, one);
    if (e) return e;
    if (one.kind == Kind::kNone) continue;
    if (first) return bad_request(field, str_cat(field, " and ", first, " both constrain the output; send one"));
    first = field;
    out = std::move(one);
  }
  return std::nullopt;
}

}  // namespace zl::server
