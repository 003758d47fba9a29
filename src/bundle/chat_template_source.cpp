#include "bundle/chat_template_source.h"

#include <filesystem>

#include "core/mapped_file.h"
#include "jinja/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

namespace fs = std::filesystem;

bool is_file(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec);
}

// tokenizer_config.json of `dir`, or null when there is none.
StatusOr<nlohmann::ordered_json> read_config(const std::string& dir) {
  std::string path = (fs::path(dir) / "tokenizer_config.json").string();
  if (dir.empty() || !is_file(path)) return nlohmann::ordered_json();
  ZL_ASSIGN_OR_RETURN(std::string text, read_file(path));
  nlohmann::ordered_json config = nlohmann::ordered_json::parse(text, nullptr, false);
  if (config.is_discarded() || !config.is_object()) return data_loss(path, ": not a JSON object");
  return config;
}

}  // namespace

std::string special_token_text(const nlohmann::ordered_json& config, const std::string& key) {
  if (!config.is_object() || !config.contains(key)) return "";
  const auto& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

StatusOr<std::string> select_chat_template(const nlohmann::ordered_json& value, const std::string& name) {
  if (value.is_string()) {
    if (!name.empty() && name != "default") return not_found("the model has a single chat template, not one named '", name, "'");
    return value.get<std::string>();
  }
  if (!value.is_array()) return data_loss("chat_template must be a string or a list of {\"name\", \"template\"}");
  std::string wanted = name.empty() ? "default" : name;
  std::string names;
  for (const auto& entry : value) {
    if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
        !entry["template"].is_string()) {
      return data_loss("chat_template list entries must be {\"name\": string, \"template\": string}");
    }
    if (entry["name"] == wanted) return entry["template"].get<std::string>();
    names += (names.empty() ? "" : ", ") + entry["name"].get<std::string>();
  }
  return not_found("no chat template named '", wanted, "' (the model has: ", names, ")");
}

StatusOr<ResolvedChatTemplate> resolve_chat_template(const ChatTemplateRequest& request) {
  ResolvedChatTemplate out;
  // bos/eos first: they do not depend on where the template comes from.
  std::vector<std::string> dirs;
  for (const std::string& d : {request.tokenizer_dir, request.model_dir}) {
    if (!d.empty()) dirs.push_back(d);
  }
  nlohmann::ordered_json config;
  std::string config_dir;
  for (const std::string& d : dirs) {
    ZL_ASSIGN_OR_RETURN(config, read_config(d));
    if (!config.is_null()) {
      config_dir = d;
      break;
    }
  }
  out.bos_token = special_token_text(config, "bos_token");
  out.eos_token = special_token_text(config, "eos_token");
  if (request.tokenizer != nullptr) {
    const SpecialTokenIds& ids = request.tokenizer->special_ids();
    if (out.bos_token.empty() && ids.bos >= 0) out.bos_token = request.tokenizer->token_text(ids.bos);
    if (out.eos_token.empty() && ids.eos >= 0) out.eos_token = request.tokenizer->token_text(ids.eos);
  }

  if (request.override_template == "chatml") {
    out.source = std::string(chatml_template_source());
    out.origin = "built-in ChatML";
    return out;
  }
  if (!request.override_template.empty()) {
    ZL_ASSIGN_OR_RETURN(out.source, read_file(request.override_template));
    out.origin = request.override_template;
    return out;
  }
  for (const std::string& d : dirs) {
    std::string jinja = (fs::path(d) / "chat_template.jinja").string();
    if (is_file(jinja)) {
      ZL_ASSIGN_OR_RETURN(out.source, read_file(jinja));
      out.origin = jinja;
      return out;
    }
  }
  if (config.is_object() && config.contains("chat_template") && !config["chat_template"].is_null()) {
    auto selected = select_chat_template(config["chat_template"], request.template_name);
    if (!selected.ok()) return selected.status().with_prefix((fs::path(config_dir) / "tokenizer_config.json").string());
    out.source = std::move(*selected);
    out.origin = (fs::path(config_dir) / "tokenizer_config.json").string();
    return out;
  }
  if (!request.gguf_template.empty()) {
    out.source = request.gguf_template;
    out.origin = "GGUF tokenizer.chat_template";
    return out;
  }
  return not_found(
      "the model has no chat template (no chat_template.jinja, no chat_template in tokenizer_config.json, no "
      "tokenizer.chat_template in GGUF metadata); pass --chat-template FILE, or --chat-template chatml for plain ChatML");
}

}  // namespace zl
