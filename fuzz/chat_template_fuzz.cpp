// A Jinja chat template: parsed, then rendered with messages, a tool and
// the usual variables, under tight limits so that every input ends fast.
#include <nlohmann/json.hpp>

#include "jinja/chat_template.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const auto m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi <b>there</b> {{ x }}"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
      "function": {"name": "get", "arguments": {"city": "Paris", "n": [1, 2.5, null, true]}}}]},
    {"role": "tool", "content": "{\"t\": 21}"},
    {"role": "user", "content": [{"type": "text", "text": "and then?"}]}])");
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zl::ChatTemplateLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_loop_iterations = 100'000;
  limits.max_call_depth = 50;
  auto parsed = zl::ChatTemplate::parse(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", limits);
  if (!parsed.ok()) return 0;
  parsed->set_fixed_time(0);
  zl::ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.tools = nlohmann::ordered_json::parse(
      R"([{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}])");
  options.extra["enable_thinking"] = false;
  (void)zl::apply_chat_template(*parsed, messages(), options);
  return 0;
}
