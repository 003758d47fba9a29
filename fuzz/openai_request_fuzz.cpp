// An HTTP request body as the completions, chat, responses, tokenize and
// detokenize routes read it (JSON, fields, ranges, prompts, chat
// rendering), down to the response text of a parsed request.
#include "jinja/chat_template.h"
#include "server/openai_api.h"
#include "server/responses_api.h"
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
  (void)zl::server::parse_chat_request(chat_body.dump(), *f.tokenizer, f.limits, f.chat, chat);
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
  return 0;
}
