#include "jinja/chat_template.h"

#include "jinja/chat_template_ast.h"
#include "jinja/chat_template_eval.h"

namespace zl {
namespace {

using jinja::Expr;
using jinja::ExprKind;
using jinja::Node;

// jinja2 rejects unknown filters and tests when it compiles the template.
Status check_names(const Expr* e) {
  if (e == nullptr) return ok_status();
  if (e->kind == ExprKind::kFilter && !jinja::is_known_filter(e->name)) {
    return invalid_argument("line ", e->line, ", column ", e->col, ": No filter named '", e->name, "'.");
  }
  if (e->kind == ExprKind::kTest && !jinja::is_known_test(e->name)) {
    return invalid_argument("line ", e->line, ", column ", e->col, ": No test named '", e->name, "'.");
  }
  for (const auto& a : e->args) ZL_RETURN_IF_ERROR(check_names(a.get()));
  for (const auto& kv : e->kwargs) ZL_RETURN_IF_ERROR(check_names(kv.second.get()));
  return ok_status();
}

Status check_names(const jinja::NodeList& body) {
  for (const auto& n : body) {
    ZL_RETURN_IF_ERROR(check_names(n->expr.get()));
    ZL_RETURN_IF_ERROR(check_names(n->filter.get()));
    for (const auto& p : n->params) ZL_RETURN_IF_ERROR(check_names(p.second.get()));
    ZL_RETURN_IF_ERROR(check_names(n->body));
    ZL_RETURN_IF_ERROR(check_names(n->else_body));
  }
  return ok_status();
}

// transformers: {"thinking": r, **message, "reasoning_content": r} when a
// message carries its reasoning under any of these names. Null fields are
// dropped, but a null content, OpenAI's "no text, only tool calls", which
// templates test for (DeepSeek R1's renders a turn's calls only when its
// content `is none`).
nlohmann::ordered_json normalize_message(const nlohmann::ordered_json& message) {
  if (!message.is_object()) return message;
  nlohmann::ordered_json clean = nlohmann::ordered_json::object();
  for (const auto& [k, v] : message.items()) {
    if (!v.is_null() || k == "content") clean[k] = v;
  }
  const nlohmann::ordered_json* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    if (clean.contains(key)) {
      reasoning = &clean[key];
      break;
    }
  }
  if (reasoning == nullptr) return clean;
  nlohmann::ordered_json aliased = nlohmann::ordered_json::object();
  aliased["thinking"] = *reasoning;
  for (const auto& [k, v] : clean.items()) aliased[k] = v;
  aliased["reasoning_content"] = *reasoning;
  return aliased;
}

constexpr std::string_view kChatml =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}"
    "{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

}  // namespace

std::string_view chatml_template_source() { return kChatml; }

StatusOr<ChatTemplate> ChatTemplate::parse(std::string_view source, std::string name, const ChatTemplateLimits& limits) {
  ChatTemplate t;
  t.name_ = std::move(name);
  t.source_ = std::string(source);
  t.limits_ = limits;
  auto program = jinja::parse_template(t.source_, t.name_);
  if (!program.ok()) return program.status().with_prefix(t.name_);
  if (Status s = check_names((*program)->body); !s.ok()) return s.with_prefix(t.name_);
  t.program_ = std::shared_ptr<const jinja::Program>(std::move(*program));
  return t;
}

StatusOr<std::string> ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) return invalid_argument(name_, ": the template context must be a JSON object");
  jinja::RenderEnv env;
  env.limits.max_output_bytes = limits_.max_output_bytes;
  env.limits.max_loop_iterations = limits_.max_loop_iterations;
  env.limits.max_call_depth = limits_.max_call_depth;
  env.fixed_time = fixed_time_;
  jinja::Renderer renderer(*program_, env);
  StatusOr<std::string> out = renderer.render(jinja::Value::from_json(context));
  if (!out.ok()) return out.status().with_prefix(name_);
  return out;
}

StatusOr<std::string> apply_chat_template(const ChatTemplate& chat_template, const nlohmann::ordered_json& messages,
                                          const ChatTemplateOptions& options) {
  if (!messages.is_array()) return invalid_argument("messages must be a JSON array");
  if (!options.extra.is_null() && !options.extra.is_object()) return invalid_argument("extra template variables must be an object");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  nlohmann::ordered_json normalized = nlohmann::ordered_json::array();
  for (const auto& m : messages) {
    if (!m.is_object()) return invalid_argument("each message must be a JSON object");
    normalized.push_back(normalize_message(m));
  }
  context["messages"] = std::move(normalized);
  context["tools"] = options.tools;
  context["documents"] = options.documents;
  context["add_generation_prompt"] = options.add_generation_prompt;
  context["bos_token"] = options.bos_token;
  context["eos_token"] = options.eos_token;
  if (options.extra.is_object()) {
    for (const auto& [k, v] : options.extra.items()) {
      if (k != "messages") context[k] = v;
    }
  }
  return chat_template.render(context);
}

}  // namespace zl
