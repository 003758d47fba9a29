// An HTTP request body as the completions, chat, tokenize and detokenize
// routes read it (JSON, fields, ranges, prompts, chat rendering), down to
// the response text of a parsed request.
#include "jinja/chat_template.h"
#include "server/openai_api.h"
#include "tokenizer/tokenizer.h"

namespace {

struct Fixture {
  std::unique_ptr<zl::Tokenizer> tokenizer = zl::make_byte_tokenizer(512);
  zl::server::ApiLimits limits;
  zl::server::ChatSettings chat;
  Fixture() {
    limits.vocab_size = 512;
    limits.max_seq_len = 256;
    auto parsed = zl::ChatTemplate::parse(zl::chatml_template_source());
    if (parsed.ok()) chat.loaded.chat_template = std::make_shared<const zl::ChatTemplate>(std::move(*parsed));
  }
};

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
  return 0;
}
