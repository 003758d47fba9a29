// Request parsing and validation for the OpenAI-compatible API: every bad
// field comes back as a 400 naming it; good requests map onto engine requests.
#include "server/openai_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "bundle/chat_prompt.h"
#include "server/sse.h"

namespace zl::server {
namespace {

using nlohmann::json;

class OpenAiApiTest : public ::testing::Test {
 protected:
  OpenAiApiTest() : tokenizer_(make_byte_tokenizer(512)) {
    limits_.vocab_size = 512;
    limits_.max_seq_len = 64;
  }

  std::optional<ApiError> parse(const std::string& body) {
    request_ = CompletionRequest();
    return parse_completion_request(body, *tokenizer_, limits_, request_);
  }
  // The param named by the error, or "<ok>".
  std::string param_of(const std::string& body) {
    auto e = parse(body);
    if (!e) return "<ok>";
    EXPECT_EQ(e->http_status, 400) << body;
    EXPECT_FALSE(e->message.empty());
    return e->param;
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  ApiLimits limits_;
  CompletionRequest request_;
};

TEST_F(OpenAiApiTest, ParsesAFullRequest) {
  auto e = parse(R"({"model":"m","prompt":"Hi","n":2,"max_tokens":5,"temperature":0.5,"top_p":0.9,"top_k":7,
    "min_p":0.1,"seed":42,"stop":["a","b"],"presence_penalty":0.5,"frequency_penalty":-0.5,"repetition_penalty":1.2,
    "logprobs":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true},"cache_salt":"t",
    "priority":3,"echo":false,"logit_bias":{"300":-100,"7":2.5},"include_stop_str_in_output":true})");
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(request_.model, "m");
  ASSERT_EQ(request_.prompts.size(), 1u);
  EXPECT_EQ(request_.prompts[0], (std::vector<int32_t>{256, 'H', 'i'}));  // bos added, as the engine does
  EXPECT_EQ(request_.n, 2);
  EXPECT_EQ(request_.max_tokens, 5);
  EXPECT_FLOAT_EQ(request_.sampling.temperature, 0.5f);
  EXPECT_EQ(request_.sampling.top_k, 7);
  EXPECT_TRUE(request_.sampling.has_seed);
  EXPECT_EQ(request_.sampling.num_top_logprobs, 3);
  EXPECT_TRUE(request_.want_logprobs);
  EXPECT_EQ(request_.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(request_.ignore_eos && request_.stream && request_.include_usage && request_.include_stop_str);
  EXPECT_EQ(request_.cache_salt, "t");
  EXPECT_EQ(request_.priority, 3);
  ASSERT_EQ(request_.sampling.logit_bias.size(), 2u);  // sorted by id
  EXPECT_EQ(request_.sampling.logit_bias[0].id, 7);
  EXPECT_FLOAT_EQ(request_.sampling.logit_bias[0].bias, 2.5f);
  EXPECT_EQ(request_.sampling.logit_bias[1].id, 300);
  EXPECT_FLOAT_EQ(request_.sampling.logit_bias[1].bias, -100.0f);
}

// The byte vocabulary plus Qwen's three fill-in-the-middle tokens (ids
// 300-302), spelled in text with parse_special.
class FimTokenizer : public Tokenizer {
 public:
  static constexpr std::string_view kNames[] = {"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"};
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = false) const override {
    for (int32_t k = 0; k < 3; ++k)
      if (parse_special && text == kNames[k]) return {300 + k};
    return bytes_->encode(text, add_special, parse_special);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const override {
    return bytes_->decode(ids, skip_special);
  }
  int32_t vocab_size() const override { return 512; }
  std::string token_text(int32_t id) const override {
    return id >= 300 && id < 303 ? std::string(kNames[id - 300]) : bytes_->token_text(id);
  }
  bool is_special(int32_t id) const override { return bytes_->is_special(id); }
  TokenSpelling token_spelling() const override { return bytes_->token_spelling(); }
  const SpecialTokenIds& special_ids() const override { return bytes_->special_ids(); }
  std::string describe() const override { return "bytes + fim"; }

 private:
  std::unique_ptr<Tokenizer> bytes_ = make_byte_tokenizer(512);
};

// suffix: the prompt laid out prefix first between the vocabulary's FIM
// tokens; a vocabulary without them, or a prompt that is not one text, 400.
TEST_F(OpenAiApiTest, SuffixFillsInTheMiddle) {
  EXPECT_EQ(param_of(R"({"prompt":"def f(","suffix":"):"})"), "suffix");  // bytes only: no FIM tokens
  EXPECT_EQ(param_of(R"({"prompt":"x","suffix":3})"), "suffix");
  EXPECT_EQ(param_of(R"({"prompt":"x","suffix":""})"), "<ok>");  // an empty suffix changes nothing
  tokenizer_ = std::make_unique<FimTokenizer>();
  ASSERT_FALSE(parse(R"({"prompt":["ab"],"suffix":"c"})"));
  EXPECT_EQ(request_.prompts, (std::vector<std::vector<int32_t>>{{256, 300, 'a', 'b', 301, 'c', 302}}));
  EXPECT_EQ(param_of(R"({"prompt":[1,2],"suffix":"c"})"), "suffix");
  EXPECT_EQ(param_of(R"({"prompt":["a","b"],"suffix":"c"})"), "suffix");
  EXPECT_EQ(param_of(R"({"prompt":"a","suffix":"c","echo":true})"), "suffix");
  EXPECT_EQ(param_of(R"({"prompt":"a","suffix":")" + std::string(100, 'x') + R"("})"), "prompt");  // beyond the context
}

TEST_F(OpenAiApiTest, PromptShapes) {
  ASSERT_FALSE(parse(R"({"prompt":["a","bc"]})"));
  EXPECT_EQ(request_.prompts.size(), 2u);
  ASSERT_FALSE(parse(R"({"prompt":[1,2,3]})"));
  EXPECT_EQ(request_.prompts, (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
  ASSERT_FALSE(parse(R"({"prompt":[[1],[2,3]]})"));
  EXPECT_EQ(request_.prompts.size(), 2u);
  ASSERT_FALSE(parse(R"({"prompt":"x","logprobs":0})"));
  EXPECT_TRUE(request_.want_logprobs);
  EXPECT_EQ(request_.sampling.num_top_logprobs, 0);
  ASSERT_FALSE(parse(R"({"prompt":"x"})"));
  EXPECT_FALSE(request_.want_logprobs);
  EXPECT_EQ(request_.max_tokens, 16);
}

TEST_F(OpenAiApiTest, BadFieldsAreNamed) {
  EXPECT_EQ(param_of(R"({})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":""})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[]})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[[]]})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":7})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[1,512]})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[-1]})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":[1.5]})"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":")" + std::string(100, 'x') + R"("})"), "prompt");  // beyond max_seq_len 64
  EXPECT_EQ(param_of(R"({"prompt":"x","max_tokens":0})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"x","max_tokens":65})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"x","max_tokens":"5"})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"x","max_tokens":18446744073709551615})"), "max_tokens");
  EXPECT_EQ(param_of(R"({"prompt":"x","temperature":-0.1})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt":"x","temperature":1e300})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt":"x","top_p":0})"), "top_p");
  EXPECT_EQ(param_of(R"({"prompt":"x","top_k":-2})"), "top_k");
  EXPECT_EQ(param_of(R"({"prompt":"x","top_k":1e40})"), "top_k");
  EXPECT_EQ(param_of(R"({"prompt":"x","min_p":1.5})"), "min_p");
  EXPECT_EQ(param_of(R"({"prompt":"x","repetition_penalty":0})"), "repetition_penalty");
  EXPECT_EQ(param_of(R"({"prompt":"x","presence_penalty":2.5})"), "presence_penalty");
  EXPECT_EQ(param_of(R"({"prompt":"x","frequency_penalty":-2.5})"), "frequency_penalty");
  EXPECT_EQ(param_of(R"({"prompt":"x","n":0})"), "n");
  EXPECT_EQ(param_of(R"({"prompt":"x","n":129})"), "n");
  EXPECT_EQ(param_of(R"({"prompt":"x","logprobs":21})"), "logprobs");
  EXPECT_EQ(param_of(R"({"prompt":"x","logprobs":true})"), "logprobs");
  EXPECT_EQ(param_of(R"({"prompt":"x","seed":1.5})"), "seed");
  EXPECT_EQ(param_of(R"({"prompt":"x","stop":3})"), "stop");
  EXPECT_EQ(param_of(R"({"prompt":"x","stop":[3]})"), "stop");
  EXPECT_EQ(param_of(R"({"prompt":"x","stream":1})"), "stream");
  EXPECT_EQ(param_of(R"({"prompt":"x","stream_options":{"include_usage":true}})"), "stream_options");
  EXPECT_EQ(param_of(R"({"prompt":"x","stream":true,"stream_options":{"include_usage":1}})"),
            "stream_options.include_usage");
  EXPECT_EQ(param_of(R"({"prompt":"x","echo":true,"logprobs":1})"), "echo");
  EXPECT_EQ(param_of(R"({"prompt":"x","echo":1})"), "echo");
  EXPECT_EQ(param_of(R"({"prompt":"x","best_of":3})"), "best_of");
  EXPECT_EQ(param_of(R"({"prompt":"x","include_stop_str_in_output":1})"), "include_stop_str_in_output");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":[1]})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"a":2}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"1 ":2}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"-1":2}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"100000":2}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"1":100.5}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"1":100.000000001}})"), "logit_bias");  // 100.0f as a float
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"1":"2"}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","logit_bias":{"1":2,"01":3}})"), "logit_bias");
  EXPECT_EQ(param_of(R"({"prompt":"x","priority":99999999999})"), "priority");
  EXPECT_EQ(param_of(R"({"prompt":"x","cache_salt":5})"), "cache_salt");
  EXPECT_EQ(param_of(R"({"prompt":"x","model":5})"), "model");
}

// Every field of zerolayer/request_fields.h's table that /v1/completions
// carries is read with the table's range (at most the context where the
// table says so): each end accepted unless open, a step beyond refused
// naming the field, a fraction refused where only integers go; and the
// engine's own check (check_field, validate_sampling) agrees on each value.
// The one-token prompt takes one of the context's tokens: over HTTP, a field
// bounded by the context is sent one less at the top (prompt plus max_tokens
// must fit, vLLM's rule).
TEST_F(OpenAiApiTest, EveryTableFieldHasTheTablesRange) {
  for (const RequestField* f : field::kAll) {
    if (!(f->carriers & kCompletions)) continue;
    const double hi = f->within_context ? std::min(f->hi, double(limits_.max_seq_len)) : f->hi;
    const double step = f->integer ? 1.0 : 0.01;
    std::vector<std::pair<double, bool>> cases = {
        {f->lo, !f->lo_open}, {hi, true}, {f->lo - step, false}, {hi + step, false}};
    if (f->integer) cases.push_back({f->lo + 0.5, false});
    for (const auto& [value, ok] : cases) {
      json body = {{"prompt", {1}}};
      const double sent = f->within_context && value >= hi ? value - 1 : value;
      body[f->name] = sent;
      if (f->integer && sent == std::floor(sent)) body[f->name] = static_cast<int64_t>(sent);
      EXPECT_EQ(param_of(body.dump()), ok ? "<ok>" : f->name) << body.dump();
      EXPECT_EQ(check_field(*f, value, limits_.max_seq_len).ok(), ok) << f->name << " " << value;
    }
  }
  SamplingParams defaults;
  EXPECT_TRUE(validate_sampling(defaults, 512).ok());
  EXPECT_FLOAT_EQ(defaults.temperature, field::kTemperature.default_value);
  EXPECT_FLOAT_EQ(defaults.top_p, field::kTopP.default_value);
  EXPECT_FLOAT_EQ(defaults.repetition_penalty, field::kRepetitionPenalty.default_value);
  CompletionRequest request;
  EXPECT_EQ(request.max_tokens, field::kMaxTokens.default_value);
  EXPECT_EQ(request.n, field::kN.default_value);
}

// A field is named as its carrier names it, and the context bounds only the
// fields the table says it does.
TEST(RequestFieldsTest, NamesAndContextBound) {
  EXPECT_EQ(check_field(field::kMaxTokens, 65, 64).message(),
            "max_tokens must be an integer in [1, 64] (the context), got 65");
  EXPECT_EQ(check_field(field::kMaxTokens, 0, 0, FieldName::kRecord).message(),
            "max_new_tokens must be an integer in [1, 2147483647], got 0");
  EXPECT_TRUE(check_field(field::kMaxTokens, 65, 0).ok());
  EXPECT_TRUE(check_field(field::kPriority, 1000, 64).ok());
  EXPECT_EQ(check_field(field::kTopLogprobs, 21, 0, FieldName::kRecord).message(),
            "num_top_logprobs must be an integer in [0, 20], got 21");
  EXPECT_EQ(check_field(field::kTemperature, 101, 0, FieldName::kRecord).message(),
            "temperature must be in [0, 100], got 101");
}

// Lists of token ids (prompt, stop_token_ids) are checked by one function
// wherever they arrive: HTTP's 400 says what Engine::submit and the
// shared-memory decoder say (check_token_ids), naming the field and position.
TEST_F(OpenAiApiTest, TokenIdListsAreCheckedAsTheEngineChecksThem) {
  const int32_t vocab = limits_.vocab_size;
  for (const char* field : {"prompt", "stop_token_ids"}) {
    json body = {{"prompt", {1, 2}}};
    body[field] = {1, vocab};
    auto e = parse(body.dump());
    ASSERT_TRUE(e.has_value()) << field;
    EXPECT_EQ(e->param, field);
    const std::vector<int32_t> ids = {1, vocab};
    EXPECT_EQ(e->message, check_token_ids(field, ids, vocab).message());
    EXPECT_EQ(e->message, std::string(field) + ": token id 512 at position 1 is out of range [0, 512)");
  }
  EXPECT_TRUE(check_token_ids("prompt", std::vector<int32_t>{0, vocab - 1}, vocab).ok());
  EXPECT_FALSE(check_token_id("prompt", -1, 0, vocab).ok());
  // A list longer than a shared-memory record carries is refused by name.
  json many = {{"prompt", {1}}, {"stop_token_ids", std::vector<int32_t>(kMaxStopTokenIds + 1, 1)}};
  EXPECT_EQ(param_of(many.dump()), "stop_token_ids");
  many["stop_token_ids"] = std::vector<int32_t>(kMaxStopTokenIds, 1);
  EXPECT_EQ(param_of(many.dump()), "<ok>");
}

// Stop strings and cache_salt have the table's byte limits, as the engine
// and the shared-memory decoder check them (check_text_bytes).
TEST_F(OpenAiApiTest, TextFieldsHaveTheTablesLimits) {
  for (const auto& [field, max] : {std::pair<const char*, uint32_t>{"stop", kMaxStopBytes},
                                   std::pair<const char*, uint32_t>{"cache_salt", kMaxCacheSaltBytes}}) {
    json body = {{"prompt", {1}}};
    body[field] = std::string(max, 'a');
    EXPECT_EQ(param_of(body.dump()), "<ok>") << field;
    body[field] = std::string(max + 1, 'a');
    auto e = parse(body.dump());
    ASSERT_TRUE(e.has_value()) << field;
    EXPECT_EQ(e->param, field);
    EXPECT_EQ(e->message, check_text_bytes(field, std::string(max + 1, 'a'), max).message());
  }
}

TEST_F(OpenAiApiTest, TooManyStopStrings) {
  json body{{"prompt", "x"}, {"stop", json::array()}};
  for (int i = 0; i < 1000; ++i) body["stop"].push_back(std::to_string(i) + "s");
  auto e = parse(body.dump());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "stop");
  EXPECT_NE(e->message.find("1000"), std::string::npos);
  body["stop"] = json::array({"a", "b"});
  EXPECT_FALSE(parse(body.dump()));
}

TEST_F(OpenAiApiTest, MalformedJsonNamesTheFieldWhenItCan) {
  EXPECT_EQ(param_of(R"({"prompt":"x","temperature":NaN})"), "temperature");
  EXPECT_EQ(param_of(R"({"prompt":"x", "top_p" : -Infinity})"), "top_p");
  EXPECT_EQ(param_of("{\"prompt\":\"\xff\"}"), "prompt");
  EXPECT_EQ(param_of(R"({"prompt":)"), "prompt");
  EXPECT_EQ(param_of("nonsense"), "");
  EXPECT_EQ(param_of("[1,2]"), "");
  EXPECT_EQ(param_of(std::string(100000, '[')), "");
  EXPECT_EQ(param_of(""), "");
}

TEST_F(OpenAiApiTest, ChoicesAndSeeds) {
  ASSERT_FALSE(parse(R"({"prompt":["a","b"],"n":3,"seed":10,"max_tokens":4,"stop":"z"})"));
  Request r = make_engine_request(request_, 1, 2);
  EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{256, 'b'}));
  EXPECT_EQ(r.sampling.seed, 12u);
  EXPECT_EQ(r.max_new_tokens, 4);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"z"}));
  limits_.max_choices = 5;
  EXPECT_EQ(param_of(R"({"prompt":["a","b"],"n":3})"), "n");
}

TEST_F(OpenAiApiTest, SubmitErrorsMapToStatuses) {
  ApiError full = submit_error(resource_exhausted("the waiting queue is full (4 requests); retry later"));
  EXPECT_EQ(full.http_status, 503);
  EXPECT_EQ(full.code, "queue_full");
  ApiError context = submit_error(out_of_range("prompt: 90 tokens do not fit the context"));
  EXPECT_EQ(context.http_status, 400);
  EXPECT_EQ(context.param, "prompt");
  ApiError kv = submit_error(resource_exhausted("the request needs 900 tokens of KV memory"));
  EXPECT_EQ(kv.http_status, 400);
  EXPECT_EQ(submit_error(invalid_argument("max_new_tokens must be at least 1")).param, "max_tokens");
  EXPECT_EQ(submit_error(invalid_argument("top_p must be in (0, 1]")).param, "top_p");
}

TEST_F(OpenAiApiTest, ResponseBodies) {
  ASSERT_FALSE(parse(R"({"prompt":"a","logprobs":1})"));
  ChoiceOutput c;
  c.text = "hi";
  c.token_ids = {'h', 'i'};
  c.token_logprobs = {-0.5f, -0.25f};
  c.top_logprobs = {{{'h', -0.5f}}, {{'i', -0.25f}}};
  FinishEvent f;
  f.reason = FinishReason::kLength;
  f.num_prompt_tokens = 2;
  f.num_generated_tokens = 2;
  f.timings.first_token_s = 0.01;
  f.timings.finish_s = 0.03;
  c.finish = f;
  ResponseMeta meta{"cmpl-1", 7, "m"};
  std::vector<ChoiceOutput> choices{c};
  json body = json::parse(completion_body(meta, request_, choices, *tokenizer_));
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "hi");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["choices"][0]["logprobs"]["tokens"], json::array({"h", "i"}));
  EXPECT_EQ(body["choices"][0]["logprobs"]["text_offset"], json::array({0, 1}));
  EXPECT_EQ(body["usage"]["total_tokens"], 4);
  EXPECT_EQ(body["timings"]["predicted_n"], 2);
  EXPECT_NEAR(body["timings"]["predicted_ms"].get<double>(), 20.0, 1e-6);

  c.text = "\xff";  // a lone byte must not make dump() throw
  json chunk = json::parse(completion_chunk(meta, 0, c, request_, *tokenizer_));
  EXPECT_EQ(chunk["choices"][0]["text"], "\xEF\xBF\xBD");
  json err = json::parse(error_body(ApiError{400, "bad", "invalid_request_error", "", ""}));
  EXPECT_TRUE(err["error"]["param"].is_null());
  EXPECT_EQ(err["error"]["message"], "bad");
}

TEST_F(OpenAiApiTest, TokenizeAndDetokenize) {
  std::string out;
  const ChatSettings no_chat;
  ASSERT_FALSE(tokenize_body(R"({"prompt":"Hi","add_special_tokens":false})", *tokenizer_, limits_, no_chat, out));
  EXPECT_EQ(json::parse(out), json::parse(R"({"tokens":[72,105],"count":2,"max_model_len":64})"));
  ASSERT_FALSE(detokenize_body(R"({"tokens":[72,105]})", *tokenizer_, limits_, out));
  EXPECT_EQ(json::parse(out)["prompt"], "Hi");
  auto e = detokenize_body(R"({"tokens":[72,600]})", *tokenizer_, limits_, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tokens");
  e = tokenize_body(R"({"prompt":1})", *tokenizer_, limits_, no_chat, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
}

class ChatApiTest : public OpenAiApiTest {
 protected:
  ChatApiTest() {
    chat_.loaded.chat_template =
        std::make_shared<const ChatTemplate>(*ChatTemplate::parse(chatml_template_source(), "chatml"));
    chat_.loaded.end_of_turn_ids = {257};
    limits_.max_seq_len = 512;  // the byte tokenizer spends a token per byte
  }
  std::optional<ApiError> parse_chat(const std::string& body) {
    request_ = CompletionRequest();
    rendered_.clear();
    return parse_chat_request(body, *tokenizer_, limits_, chat_, request_, &rendered_);
  }
  // The error's message, or "<ok>"; expects param "messages" when `param` is.
  std::string chat_error(const std::string& body, const std::string& param = "messages") {
    auto e = parse_chat(body);
    if (!e) return "<ok>";
    EXPECT_EQ(e->http_status, 400) << body;
    EXPECT_EQ(e->param, param) << body << ": " << e->message;
    return e->message;
  }

  ChatSettings chat_;
  std::string rendered_;
};

TEST_F(ChatApiTest, RendersAndTokenizesTheConversation) {
  ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"system","content":"Be brief."},
                                          {"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":"there"}]}],
                              "max_completion_tokens":5,"temperature":0})"));
  EXPECT_EQ(rendered_, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi\nthere<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_TRUE(request_.chat);
  EXPECT_EQ(request_.max_tokens, 5);
  ASSERT_EQ(request_.prompts.size(), 1u);
  EXPECT_EQ(request_.prompts[0], tokenizer_->encode(rendered_, /*add_special=*/true, /*parse_special=*/true));
  EXPECT_EQ(request_.stop_token_ids, std::vector<int32_t>{257});
  EXPECT_EQ(make_engine_request(request_, 0, 0).stop_token_ids, std::vector<int32_t>{257});
}

// continue_final_message: the text ends after the final message's content
// (its trailing blanks kept where the template keeps them); with echo that
// content comes back before the output.
TEST_F(ChatApiTest, ContinueFinalMessage) {
  const std::string turns = R"("messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"  Hello, "}])";
  ASSERT_FALSE(parse_chat("{" + turns + R"(,"continue_final_message":true,"add_generation_prompt":false,"echo":true})"));
  EXPECT_EQ(rendered_, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n  Hello, ");
  EXPECT_EQ(request_.chat_echo, "  Hello, ");
  EXPECT_NE(chat_error("{" + turns + R"(,"continue_final_message":true})", "continue_final_message"), "<ok>");
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}],
                          "continue_final_message":true,"add_generation_prompt":false})"), "<ok>");
  ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"Hi"}],"echo":true})"));
  EXPECT_EQ(request_.chat_echo, "");  // echo repeats only an assistant's message
}

TEST_F(ChatApiTest, DefaultsMaxTokensToTheRestOfTheContext) {
  ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"Hi"}]})"));
  EXPECT_EQ(request_.max_tokens, limits_.max_seq_len - static_cast<int32_t>(request_.prompts[0].size()));
}

// /tokenize with messages: the template's rendering, tokenized without
// adding bos (the text holds what the template wrote).
TEST_F(ChatApiTest, TokenizeMessages) {
  // The ids the chat route runs on (bos added unless the template wrote it),
  // or, with add_special_tokens false, the rendered text's alone.
  std::string out, rendered;
  const std::string messages = R"("messages":[{"role":"user","content":"Hi"}])";
  ASSERT_FALSE(tokenize_body("{" + messages + "}", *tokenizer_, limits_, chat_, out));
  CompletionRequest chat;
  ASSERT_FALSE(parse_chat_request("{" + messages + "}", *tokenizer_, limits_, chat_, chat, &rendered));
  EXPECT_EQ(json::parse(out)["tokens"], json(chat.prompts[0]));
  EXPECT_GT(chat.prompts[0].size(), 2u);
  ASSERT_FALSE(tokenize_body("{" + messages + R"(,"add_special_tokens":false})", *tokenizer_, limits_, chat_, out));
  EXPECT_EQ(json::parse(out)["tokens"], json(tokenizer_->encode(rendered, /*add_special=*/false)));
}

// A syntax whose markers are special tokens keeps them in the text its parser
// reads, unless the request says otherwise; hermes' are text anyway.
TEST_F(ChatApiTest, SpecialMarkedToolSyntaxesKeepSpecialTokens) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"f"}}])";
  const std::string messages = R"({"messages":[{"role":"user","content":"x"}],)";
  chat_.tool_format = ToolCallFormat::kMistral;
  ASSERT_FALSE(parse_chat(messages + tools + "}"));
  EXPECT_FALSE(request_.skip_special_tokens);
  EXPECT_FALSE(make_engine_request(request_, 0, 0).skip_special_tokens);  // on to the engine
  ASSERT_FALSE(parse_chat(messages + tools + R"(,"skip_special_tokens":true})"));
  EXPECT_TRUE(request_.skip_special_tokens);
  ASSERT_FALSE(parse_chat(messages + tools + R"(,"tool_choice":"none"})"));
  EXPECT_TRUE(request_.skip_special_tokens);
  chat_.tool_format = ToolCallFormat::kHermes;
  ASSERT_FALSE(parse_chat(messages + tools + "}"));
  EXPECT_TRUE(request_.skip_special_tokens);
}

TEST_F(ChatApiTest, AssistantToolCallsAndToolMessages) {
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[]},
                                      {"role":"tool","content":"42"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"})"),
            "<ok>");
  // No content at all beside the calls: it is added as "" (under ASan this
  // read freed memory: the insertion moved the tool_calls member; found by
  // openai_request_fuzz).
  EXPECT_EQ(chat_error(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"c1",
      "type":"function","function":{"name":"f","arguments":"{\"x\": 1}"}}]},{"role":"tool","content":"42"}]})"),
            "<ok>");
  // A tool is {"type": "function", "function": {"name": ...}} (server/chat_tools.h).
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]})", "tools")
                .find("tools[0].function"),
            std::string::npos);
}

TEST_F(ChatApiTest, BadMessagesNameTheField) {
  EXPECT_NE(chat_error(R"({})").find("required"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[]})").find("non-empty"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":"hi"})"), "<ok>");
  EXPECT_NE(chat_error(R"({"messages":[1]})").find("messages[0]"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"role":"wizard","content":"x"}]})").find("wizard"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"content":"x"}]})").find("role"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user"}]})").find("content"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":5}]})").find("content"), std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})")
                .find("image_url"),
            std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})").find("content[0].text"),
            std::string::npos);
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":["x"]}]})"), "<ok>");
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":"x"}],"tools":{}})", "tools"), "<ok>");
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":"x"}],"max_completion_tokens":0})",
                       "max_completion_tokens"),
            "<ok>");
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":"x"}],"temperature":-1})", "temperature"), "<ok>");
}

// A conversation that renders to more text than the context can be read
// from is refused before it is tokenized, as a long prompt is.
TEST_F(ChatApiTest, RenderedTextOverTheByteLimit) {
  limits_.max_prompt_bytes = 100;
  json body = {{"messages", {{{"role", "user"}, {"content", std::string(90, 'a')}}}}};
  auto e = parse_chat(body.dump());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages");
  EXPECT_EQ(e->code, "context_length_exceeded");
  EXPECT_NE(e->message.find("more than the 100 bytes"), std::string::npos) << e->message;
  body["messages"][0]["content"] = std::string(40, 'a');  // 90 bytes with ChatML's markup
  EXPECT_FALSE(parse_chat(body.dump()));
}

TEST_F(ChatApiTest, TemplateErrorsAndMissingTemplate) {
  chat_.loaded.chat_template = std::make_shared<const ChatTemplate>(
      *ChatTemplate::parse("{{ raise_exception('no system role') }}", "t"));
  EXPECT_NE(chat_error(R"({"messages":[{"role":"user","content":"x"}]})").find("no system role"), std::string::npos);
  chat_.loaded.chat_template = nullptr;
  chat_.missing_message = "this model has no chat template";
  auto e = parse_chat(R"({"messages":[{"role":"user","content":"x"}]})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_NE(e->message.find("no chat template"), std::string::npos);
}

TEST_F(ChatApiTest, ApplyTemplateAndChatShapes) {
  std::string out;
  ASSERT_FALSE(apply_template_body(R"({"messages":[{"role":"user","content":"Hi"}]})", chat_, out));
  EXPECT_EQ(json::parse(out)["prompt"], "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  auto e = apply_template_body(R"({"messages":[{"role":"x","content":"Hi"}]})", chat_, out);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "messages");

  ASSERT_FALSE(parse_chat(R"({"messages":[{"role":"user","content":"Hi"}],"stream":true})"));
  ResponseMeta meta{"chatcmpl-1", 7, "m", "chat.completion.chunk"};
  json role = json::parse(chat_role_chunk(meta, 0));
  EXPECT_EQ(role["object"], "chat.completion.chunk");
  EXPECT_EQ(role["choices"][0]["delta"]["role"], "assistant");
  ChoiceOutput piece;
  piece.text = "ab";
  json chunk = json::parse(completion_chunk(meta, 0, piece, request_, *tokenizer_));
  EXPECT_EQ(chunk["choices"][0]["delta"], json({{"content", "ab"}}));
  request_.stream = false;
  meta.object = "chat.completion";
  json body = json::parse(completion_body(meta, request_, std::span<const ChoiceOutput>(&piece, 1), *tokenizer_));
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"], json({{"role", "assistant"}, {"content", "ab"}}));
}

TEST(SseTest, Framing) {
  EXPECT_EQ(sse_chunk("{}"), "a\r\ndata: {}\n\n\r\n");
  EXPECT_EQ(sse_done_chunk(), "e\r\ndata: [DONE]\n\n\r\n");
  EXPECT_EQ(http_last_chunk(), "0\r\n\r\n");
  EXPECT_EQ(http_chunk("event: x\ndata: {}\n\n"), "13\r\nevent: x\ndata: {}\n\n\r\n");
  EXPECT_EQ(http_chunk(""), "");  // never the last chunk by mistake
}

}  // namespace
}  // namespace zl::server
