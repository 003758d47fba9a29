// An HTTP request body as the completions, chat, responses, tokenize and
// detokenize routes read it (JSON, fields, ranges, prompts, chat
// rendering), down to the response text of a parsed request; and the same
// bytes as a model's output, through every reasoning and tool-call parser
// (a prompt can steer what a model writes), whole and in pieces.
#include "jinja/chat_template.h"
#include "server/openai_api.h"
#include "server/reasoning.h"
#include "server/responses_api.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace {

struct Fixture {
  std::unique_ptr<zl::Tokenizer> tokenizer = zl::make_byte_tokenizer(512);
  zl::server::ApiLimits limits;
  zl::server::ChatSettings chat;
  // One stored conversation, so that previous_response_id "resp_fuzz" is found.
  zl::server::ResponseStore responses;
  Fixture() {
    limits.vocab_size = 512;
    limits.max_seq_len = 256;
    auto parsed = zl::ChatTemplate::parse(zl::chatml_template_source());
    if (parsed.ok()) chat.loaded.chat_template = std::make_shared<const zl::ChatTemplate>(std::move(*parsed));
    responses.put("resp_fuzz", nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}}));
  }
};

// POST /v1/responses: the body becomes a chat body, parsed as chat is.
void responses_route(const Fixture& f, std::string_view body) {
  nlohmann::ordered_json chat_body;
  zl::server::ResponsesRequest request;
  if (zl::server::responses_to_chat(body, f.responses, chat_body, request)) return;
  zl::server::CompletionRequest chat;
  (void)zl::server::parse_chat_object(chat_body, *f.tokenizer, f.limits, f.chat, chat);
  zl::server::ResponseMeta meta;
  zl::server::ChoiceOutput output;
  output.finish.emplace();
  (void)zl::server::response_body(meta, request, output);
  (void)zl::server::stored_conversation(request, output);
  zl::server::ResponseEventStream events(meta, request);
  (void)events.begin();
  (void)events.add(output);
}

}  // namespace

void model_output(std::string_view text) {
  using zl::server::ToolCallFormat;
  for (int f = 0; f <= static_cast<int>(ToolCallFormat::kDeepSeekV3); ++f) {  // the last
    const auto format = static_cast<ToolCallFormat>(f);
    (void)zl::server::parse_tool_calls(format, text);
    zl::server::ToolCallStream stream(format);
    size_t at = 0;
    for (; at + 3 < text.size(); at += 3) (void)stream.feed(text.substr(at, 3));
    (void)stream.finish(text.substr(at));
  }
  using zl::server::ReasoningFormat;
  for (ReasoningFormat format : {ReasoningFormat::kThink, ReasoningFormat::kCommandR, ReasoningFormat::kHarmony}) {
    zl::server::ReasoningSplitter splitter(format, text.size() % 2 == 1);
    std::string reasoning, content;
    for (size_t at = 0; at < text.size(); at += 2) splitter.feed(text.substr(at, 2), reasoning, content);
    splitter.finish(reasoning, content);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture f;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  zl::server::CompletionRequest completion;
  if (!zl::server::parse_completion_request(body, *f.tokenizer, f.limits, completion)) {
    zl::server::ResponseMeta meta;
    std::vector<zl::server::ChoiceOutput> choices(completion.prompts.size() * size_t(completion.n));
    (void)zl::server::completion_body(meta, completion, choices, *f.tokenizer);
  }
  zl::server::CompletionRequest chat;
  (void)zl::server::parse_chat_request(body, *f.tokenizer, f.limits, f.chat, chat);
  std::string out;
  (void)zl::server::tokenize_body(body, *f.tokenizer, f.limits, f.chat, out);
  (void)zl::server::detokenize_body(body, *f.tokenizer, f.limits, out);
  (void)zl::server::apply_template_body(body, f.chat, out);
  responses_route(f, body);
  model_output(body);
  return 0;
}
