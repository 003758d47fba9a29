// ShmServer + the C client in one process: greedy equality with the
// in-process path, malformed records, cancel, a refused live segment, and
// many concurrent clients each getting exactly one terminal record.
#include "transport/shm_server.h"

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "engine/collecting_sink.h"
#include "shm_test_util.h"
#include "zerolayer/request_fields.h"

namespace zl::test {
namespace {

class ShmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = make_tiny_engine();
    ASSERT_NE(engine_, nullptr);
    name_ = unique_shm_name("server");
    auto server = ShmServer::start(*engine_, {name_, 16 << 20});
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(*server);
    ASSERT_EQ(zl_client_connect(name_.c_str(), &client_), ZL_OK) << zl_client_last_error(nullptr);
  }
  void TearDown() override {
    if (client_) zl_client_close(client_);
    server_.reset();
    engine_.reset();
  }

  // The greedy tokens of `prompt` through the engine's own API (null on failure).
  std::shared_ptr<CollectingSink> run_in_process(const std::vector<int32_t>& prompt, int32_t max_new_tokens) {
    auto sink = std::make_shared<CollectingSink>();
    Request in_process;
    in_process.prompt_ids = prompt;
    in_process.sampling.temperature = 0.0f;
    in_process.max_new_tokens = max_new_tokens;
    in_process.ignore_eos = true;
    in_process.sink = sink;
    if (!engine_->submit(std::move(in_process)).ok() || !sink->wait(60)) return nullptr;  // a hang bound (sanitizer builds are slow)
    return sink;
  }

  // A well-formed raw SUBMIT record for this client.
  zl_shm_request raw_record(uint64_t id) {
    zl_shm_request r;
    std::memset(&r, 0, sizeof(r));
    r.kind = ZL_SHM_REQUEST_SUBMIT;
    r.client_slot = zl_client_slot(client_);
    r.client_generation = zl_client_generation(client_);
    r.client_request_id = id;
    r.prompt_kind = ZL_SHM_PROMPT_TOKENS;
    r.prompt_count = 2;
    int32_t ids[2] = {5, 6};
    std::memcpy(r.payload, ids, sizeof(ids));
    r.payload_bytes = sizeof(ids);
    r.sampling.temperature = 0.0f;
    r.sampling.top_p = 1.0f;
    r.sampling.repetition_penalty = 1.0f;
    r.max_new_tokens = 4;
    return r;
  }

  std::unique_ptr<Engine> engine_;
  std::unique_ptr<ShmServer> server_;
  std::string name_;
  zl_client* client_ = nullptr;
};

TEST_F(ShmServerTest, GreedyTokensMatchInProcess) {
  std::vector<int32_t> prompt = {1, 17, 42, 99, 7, 3};
  std::shared_ptr<CollectingSink> sink = run_in_process(prompt, 24);
  ASSERT_NE(sink, nullptr);

  zl_request request = greedy_request(prompt, 24);
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK) << zl_client_last_error(client_);
  ShmResult result = read_until_terminal(client_, id);
  ASSERT_EQ(result.status, ZL_OK) << zl_client_last_error(client_);
  EXPECT_EQ(result.tokens, sink->tokens);
  EXPECT_EQ(result.text, sink->text);
  EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
  EXPECT_EQ(result.terminal.finish_reason, uint32_t(ZL_SHM_FINISH_LENGTH));
  EXPECT_EQ(result.terminal.num_generated_tokens, 24);
  EXPECT_EQ(result.terminal.num_prompt_tokens, int32_t(prompt.size()));
  EXPECT_GT(result.terminal.finish_s, 0.0);
}

// Greedy tokens are the same whether the client sleeps before every event
// (no spinning) or spins through the stream, and the wait counters account
// for every event. (Whether a given event is read after a wake-up depends on
// the machine's load, so only their sum is checked; a wait with nothing in
// flight must sleep.)
TEST_F(ShmServerTest, SleepingAndSpinningClientsReadTheSameStream) {
  std::vector<int32_t> prompt = {3, 1, 4, 1, 5};
  zl_request request = greedy_request(prompt, 16);
  std::vector<int32_t> tokens[2];
  for (int spinning = 0; spinning < 2; ++spinning) {
    zl_client_set_spin_us(client_, spinning ? 20 : 0);
    zl_client_set_adaptive_spin_us(client_, spinning ? 100000 : 0);
    zl_client_wait_stats before, after;
    zl_client_get_wait_stats(client_, &before);
    uint64_t id = 0;
    ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK) << zl_client_last_error(client_);
    uint64_t num_events = 0;
    zl_event event;
    do {
      ASSERT_EQ(zl_client_next_event(client_, &event, 10000), ZL_OK) << zl_client_last_error(client_);
      if (event.record.kind == ZL_SHM_RESPONSE_TOKEN) tokens[spinning].push_back(event.record.token);
      ++num_events;
    } while (!zl_event_is_terminal(&event));
    zl_client_get_wait_stats(client_, &after);
    EXPECT_EQ(after.num_events - before.num_events, num_events);
    EXPECT_LE(after.num_woken_events - before.num_woken_events, after.num_sleeps - before.num_sleeps);
  }
  EXPECT_EQ(tokens[0].size(), 16u);
  EXPECT_EQ(tokens[0], tokens[1]);
  zl_client_wait_stats before, after;
  zl_client_get_wait_stats(client_, &before);
  zl_event event;
  EXPECT_EQ(zl_client_next_event(client_, &event, 30), ZL_ERR_TIMEOUT);
  zl_client_get_wait_stats(client_, &after);
  EXPECT_GE(after.num_sleeps - before.num_sleeps, 1u);
  EXPECT_EQ(after.num_events, before.num_events);
}

TEST_F(ShmServerTest, TextPromptWithStopAndSaltAndSignature) {
  zl_request request;
  zl_request_init(&request);
  request.prompt_text = "Hello, shared memory";
  request.prompt_text_bytes = uint32_t(std::strlen(request.prompt_text));
  request.max_new_tokens = 8;
  request.sampling.has_seed = 1;
  request.sampling.seed = 7;
  const char* stops[] = {"zzzz-never"};
  request.stop = stops;
  request.num_stop = 1;
  request.cache_salt = "tenant-a";
  uint8_t signature[16] = {1, 2, 3};
  request.signature = signature;
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK);
  ShmResult result = read_until_terminal(client_, id);
  ASSERT_EQ(result.status, ZL_OK);
  EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
  EXPECT_EQ(server_->stats().num_signature_hints, 1);
}

// Structured output over shared memory (protocol version 2): the C client's
// structured_kind and spec reach the engine, whose grammar holds the output
// to its language on any weights; a spec that does not compile is the
// SUBMIT's ERROR record, led by "structured_output".
TEST_F(ShmServerTest, StructuredOutputHoldsTheLanguage) {
  struct Case {
    uint32_t kind;
    const char* spec;
    std::regex expect;
  };
  const Case cases[] = {
      {ZL_SHM_STRUCTURED_REGEX, "[a-c]{3}-[0-9]{2}", std::regex("[a-c]{3}-[0-9]{2}")},
      {ZL_SHM_STRUCTURED_CHOICE, R"(["red", "green", "blue sky"])", std::regex("red|green|blue sky")},
      {ZL_SHM_STRUCTURED_JSON_SCHEMA, R"({"type": "object", "properties": {"n": {"enum": [1, 2]}}, "required": ["n"]})",
       std::regex(R"(\{"n": [12]\})")},
  };
  for (const Case& c : cases) {
    for (uint64_t seed = 0; seed < 3; ++seed) {
      zl_request request;
      zl_request_init(&request);
      const int32_t prompt[] = {1, 17, 42};
      request.prompt_ids = prompt;
      request.num_prompt_ids = 3;
      request.max_new_tokens = 64;
      request.sampling.has_seed = 1;
      request.sampling.seed = seed;
      request.structured_kind = c.kind;
      request.structured_spec = c.spec;
      request.structured_spec_bytes = uint32_t(std::strlen(c.spec));
      uint64_t id = 0;
      ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK);
      ShmResult result = read_until_terminal(client_, id);
      ASSERT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH)) << c.spec;
      EXPECT_EQ(result.terminal.finish_reason, uint32_t(FinishReason::kStop)) << result.text;
      EXPECT_TRUE(std::regex_match(result.text, c.expect)) << c.spec << " gave '" << result.text << "'";
    }
  }
  zl_request bad;
  zl_request_init(&bad);
  bad.prompt_text = "x";
  bad.prompt_text_bytes = 1;
  bad.structured_kind = ZL_SHM_STRUCTURED_REGEX;
  bad.structured_spec = "[a-";
  bad.structured_spec_bytes = 3;
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client_, &bad, &id), ZL_OK);
  ShmResult result = read_until_terminal(client_, id);
  ASSERT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_ERROR));
  EXPECT_EQ(std::string(result.terminal.text, result.terminal.text_bytes).rfind("structured_output: ", 0), 0u);
}

// A stop string longer than the table's kMaxStopBytes is the SUBMIT's
// ERROR record, naming the field as HTTP and the engine do.
TEST_F(ShmServerTest, AStopStringPastTheLimitIsAnError) {
  const std::string too_long(kMaxStopBytes + 1, 'z');
  for (const std::string& stop : {std::string(kMaxStopBytes, 'z'), too_long}) {
    zl_request request;
    zl_request_init(&request);
    request.prompt_text = "x";
    request.prompt_text_bytes = 1;
    request.max_new_tokens = 2;
    const char* stops[] = {stop.c_str()};
    request.stop = stops;
    request.num_stop = 1;
    uint64_t id = 0;
    ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK);
    ShmResult result = read_until_terminal(client_, id);
    if (stop.size() <= kMaxStopBytes) {
      EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
      continue;
    }
    ASSERT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_ERROR));
    EXPECT_NE(std::string(result.terminal.text, result.terminal.text_bytes).find("stop is longer than 1024 bytes"),
              std::string::npos);
  }
}

// Protocol version 3: logit_bias steers every token (dummy:tiny's byte
// vocabulary: id 65 is "A"), keep_special_tokens puts special tokens in the
// text, and the FINISH record's token is the stop id that ended it.
TEST_F(ShmServerTest, LogitBiasSpecialTokensAndTheStopId) {
  auto run = [&](const zl_request& request) {
    uint64_t id = 0;
    EXPECT_EQ(zl_client_submit(client_, &request, &id), ZL_OK);
    return read_until_terminal(client_, id);
  };
  const int32_t prompt[] = {1, 17, 42};
  zl_request request;
  zl_request_init(&request);
  request.prompt_ids = prompt;
  request.num_prompt_ids = 3;
  request.max_new_tokens = 8;
  request.ignore_eos = 1;
  const zl_shm_logit_bias bias[] = {{65, 100.0f}};
  request.logit_bias = bias;
  request.num_logit_bias = 1;
  ShmResult result = run(request);
  ASSERT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
  EXPECT_EQ(result.text, "AAAAAAAA");
  EXPECT_EQ(result.terminal.token, -1);  // ended by length
  // The stop id that ended it comes back; a special token (</s>, 257) is
  // text only with keep_special_tokens.
  const zl_shm_logit_bias to_eos[] = {{257, 100.0f}};
  const int32_t stop_ids[] = {257};
  request.logit_bias = to_eos;
  request.stop_token_ids = stop_ids;
  request.num_stop_token_ids = 1;
  result = run(request);
  EXPECT_EQ(result.terminal.token, 257);
  EXPECT_EQ(result.terminal.finish_reason, uint32_t(FinishReason::kStop));
  request.stop_token_ids = nullptr;
  request.num_stop_token_ids = 0;
  request.max_new_tokens = 2;
  EXPECT_EQ(run(request).text, "");
  request.keep_special_tokens = 1;
  EXPECT_EQ(run(request).text, "</s></s>");
}

// Each malformed record gets one ERROR record naming the field; the server
// One chat message header (role, declared length) followed by `bytes` bytes of "hi".
void set_chat(zl_shm_request& r, uint32_t role, uint32_t length, uint32_t bytes) {
  uint32_t header[2] = {role, length};
  r.prompt_kind = ZL_SHM_PROMPT_CHAT;
  std::memcpy(r.payload, header, sizeof(header));
  std::memcpy(r.payload + sizeof(header), "hi", bytes);
  r.prompt_count = r.payload_bytes = static_cast<uint32_t>(sizeof(header) + bytes);
}

// keeps serving the next request.
TEST_F(ShmServerTest, MalformedRecordsAreRejected) {
  struct Case {
    const char* field;
    void (*mutate)(zl_shm_request&);
  };
  const Case cases[] = {
      {"prompt_count", [](zl_shm_request& r) { r.prompt_count = 1u << 30; }},
      {"payload_bytes", [](zl_shm_request& r) { r.payload_bytes = ZL_SHM_REQUEST_PAYLOAD_BYTES + 1; }},
      {"payload_bytes", [](zl_shm_request& r) { r.payload_bytes += 4; }},
      {"stop_bytes", [](zl_shm_request& r) { r.num_stop = 1; r.stop_bytes[0] = 100000; }},
      {"num_stop", [](zl_shm_request& r) { r.num_stop = 1000; }},
      {"prompt_kind", [](zl_shm_request& r) { r.prompt_kind = 9; }},
      {"kind", [](zl_shm_request& r) { r.kind = 77; }},
      {"temperature", [](zl_shm_request& r) { r.sampling.temperature = std::nanf(""); }},
      {"top_p", [](zl_shm_request& r) { r.sampling.top_p = std::nanf(""); }},
      {"min_token_prob", [](zl_shm_request& r) { r.min_token_prob = std::nanf(""); }},
      {"ignore_eos", [](zl_shm_request& r) { r.ignore_eos = 3; }},
      {"max_new_tokens", [](zl_shm_request& r) { r.max_new_tokens = -5; }},
      {"prompt: token id", [](zl_shm_request& r) { reinterpret_cast<int32_t*>(r.payload)[0] = 1 << 30; }},
      {"cache_salt_bytes", [](zl_shm_request& r) { r.cache_salt_bytes = 1u << 31; }},
      {"structured_kind", [](zl_shm_request& r) { r.structured_kind = 9; }},
      {"structured_bytes", [](zl_shm_request& r) { r.structured_kind = ZL_SHM_STRUCTURED_REGEX; }},
      {"structured_bytes", [](zl_shm_request& r) { r.structured_bytes = 1u << 20; }},
      {"num_logit_bias", [](zl_shm_request& r) { r.num_logit_bias = ZL_SHM_MAX_LOGIT_BIAS + 1; }},
      {"num_logit_bias", [](zl_shm_request& r) { r.num_logit_bias = 1; }},  // the payload holds none
      {"keep_special_tokens", [](zl_shm_request& r) { r.keep_special_tokens = 2; }},
      // Chat messages: (uint32 role, uint32 length, bytes)...
      {"role", [](zl_shm_request& r) { set_chat(r, 9, 0, 0); }},
      {"content length", [](zl_shm_request& r) { set_chat(r, 1, 1000, 2); }},
      {"chat template", [](zl_shm_request& r) { set_chat(r, 1, 2, 2); }},  // this server has none
  };
  uint64_t id = 1000;
  for (const Case& c : cases) {
    zl_shm_request record = raw_record(++id);
    c.mutate(record);
    ASSERT_EQ(zl_client_submit_raw(client_, &record), ZL_OK);
    ShmResult result = read_until_terminal(client_, id);
    ASSERT_EQ(result.status, ZL_OK) << c.field;
    EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_ERROR)) << c.field;
    std::string message(result.terminal.text, result.terminal.text_bytes);
    EXPECT_NE(message.find(c.field), std::string::npos) << "message '" << message << "' should name " << c.field;
    EXPECT_EQ(message.find(": :"), std::string::npos) << message;  // one separator per prefix
  }
  // A record for a slot that does not exist cannot be answered: dropped and counted.
  zl_shm_request unroutable = raw_record(++id);
  unroutable.client_slot = 1u << 20;
  ASSERT_EQ(zl_client_submit_raw(client_, &unroutable), ZL_OK);

  zl_shm_request good = raw_record(++id);
  ASSERT_EQ(zl_client_submit_raw(client_, &good), ZL_OK);
  ShmResult result = read_until_terminal(client_, id);
  EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
  EXPECT_EQ(result.tokens.size(), 4u);
  EXPECT_EQ(server_->stats().num_unroutable, 1);
  EXPECT_EQ(server_->stats().num_rejected, int64_t(std::size(cases)));
}

// A prompt that does not fit one record beside its stop strings travels in
// PROMPT_PART records first: the tokens are those of the in-process path.
TEST_F(ShmServerTest, LongPromptTravelsInPartsAndMatchesInProcess) {
  std::vector<int32_t> prompt(1000);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t(3 + (i * 7919) % 250);
  std::shared_ptr<CollectingSink> sink = run_in_process(prompt, 8);
  ASSERT_NE(sink, nullptr);

  // 16 stop strings of 800 bytes leave 4000 prompt bytes no room in one record.
  std::vector<std::string> stop_texts(ZL_SHM_MAX_STOP, std::string(800, 'q'));
  std::vector<const char*> stops;
  for (const std::string& t : stop_texts) stops.push_back(t.c_str());
  zl_request request = greedy_request(prompt, 8);
  request.stop = stops.data();
  request.num_stop = uint32_t(stops.size());
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK) << zl_client_last_error(client_);
  ShmResult result = read_until_terminal(client_, id, 60000);
  ASSERT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH)) << std::string(result.terminal.text, result.terminal.text_bytes);
  EXPECT_EQ(result.terminal.num_prompt_tokens, 1000);
  EXPECT_EQ(result.tokens, sink->tokens);
}

// Bad parts are answered once, by the SUBMIT's ERROR record, naming the field.
TEST_F(ShmServerTest, BadPromptPartsGetOneErrorNamingTheField) {
  auto part = [&](uint64_t id, uint32_t kind, uint32_t bytes) {
    zl_shm_request r = raw_record(id);
    r.kind = ZL_SHM_REQUEST_PROMPT_PART;
    r.prompt_kind = kind;
    r.payload_bytes = bytes;
    std::memset(r.payload, 0, bytes);  // token id 0, over and over
    ASSERT_EQ(zl_client_submit_raw(client_, &r), ZL_OK);
  };
  auto submit_expecting = [&](uint64_t id, uint32_t in_parts, const std::string& field) {
    zl_shm_request r = raw_record(id);
    r.prompt_bytes_in_parts = in_parts;
    r.prompt_count = 2 + in_parts / 4;
    ASSERT_EQ(zl_client_submit_raw(client_, &r), ZL_OK);
    ShmResult result = read_until_terminal(client_, id);
    EXPECT_EQ(result.num_terminal, 1);
    EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_ERROR));
    std::string message(result.terminal.text, result.terminal.text_bytes);
    EXPECT_NE(message.find(field), std::string::npos) << message;
  };
  submit_expecting(1, 8, "prompt_bytes_in_parts");  // no parts came
  part(2, ZL_SHM_PROMPT_TOKENS, 8);
  part(2, ZL_SHM_PROMPT_TEXT, 8);
  submit_expecting(2, 16, "prompt_kind");
  part(3, ZL_SHM_PROMPT_TOKENS, ZL_SHM_REQUEST_PAYLOAD_BYTES);  // 1024-token context: 4096 bytes at most
  submit_expecting(3, ZL_SHM_REQUEST_PAYLOAD_BYTES, "prompt parts exceed");
  // The client goes on: a good request with a few parts' worth still works.
  part(4, ZL_SHM_PROMPT_TOKENS, 40);
  zl_shm_request ok = raw_record(4);
  ok.prompt_bytes_in_parts = 40;
  ok.prompt_count = 12;
  ASSERT_EQ(zl_client_submit_raw(client_, &ok), ZL_OK);
  ShmResult result = read_until_terminal(client_, 4);
  EXPECT_EQ(result.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH));
  EXPECT_EQ(result.terminal.num_prompt_tokens, 12);
}

// The C client's chat messages travel as ZL_SHM_PROMPT_CHAT: the same tokens
// as a record whose payload the test packs by the protocol's own words.
TEST(ShmChatTest, CClientChatMessagesEqualAHandPackedChatRecord) {
  auto engine = make_tiny_engine();
  ASSERT_NE(engine, nullptr);
  ShmServerConfig config(unique_shm_name("chat"), 16 << 20);
  config.chat_template = "chatml";  // dummy:tiny has none of its own
  auto server = ShmServer::start(*engine, config);
  ASSERT_TRUE(server.ok()) << server.status().message();
  zl_client* client = nullptr;
  ASSERT_EQ(zl_client_connect(config.name.c_str(), &client), ZL_OK) << zl_client_last_error(nullptr);

  const std::string system = "You are terse.", user = "Say hi";
  zl_chat_message messages[2] = {{ZL_SHM_ROLE_SYSTEM, system.data(), uint32_t(system.size())},
                                 {ZL_SHM_ROLE_USER, user.data(), uint32_t(user.size())}};
  zl_request request;
  zl_request_init(&request);
  request.messages = messages;
  request.num_messages = 2;
  request.sampling.temperature = 0.0f;
  request.max_new_tokens = 6;
  request.ignore_eos = 1;
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client, &request, &id), ZL_OK) << zl_client_last_error(client);
  ShmResult chat = read_until_terminal(client, id);
  ASSERT_EQ(chat.terminal.kind, uint32_t(ZL_SHM_RESPONSE_FINISH)) << std::string(chat.terminal.text, chat.terminal.text_bytes);
  EXPECT_EQ(chat.tokens.size(), 6u);
  EXPECT_GT(chat.terminal.num_prompt_tokens, int32_t(system.size() + user.size())) << "the template adds its markup";

  zl_shm_request raw;
  std::memset(&raw, 0, sizeof(raw));
  raw.kind = ZL_SHM_REQUEST_SUBMIT;
  raw.client_slot = zl_client_slot(client);
  raw.client_generation = zl_client_generation(client);
  raw.client_request_id = 1000;
  raw.prompt_kind = ZL_SHM_PROMPT_CHAT;
  uint8_t* p = raw.payload;
  for (const auto& [role, content] : {std::pair<uint32_t, std::string>{ZL_SHM_ROLE_SYSTEM, system}, {ZL_SHM_ROLE_USER, user}}) {
    uint32_t head[2] = {role, uint32_t(content.size())};
    std::memcpy(p, head, 8);
    std::memcpy(p + 8, content.data(), content.size());
    p += 8 + content.size();
  }
  raw.prompt_count = raw.payload_bytes = uint32_t(p - raw.payload);
  raw.sampling.temperature = 0.0f;
  raw.sampling.top_p = 1.0f;
  raw.sampling.repetition_penalty = 1.0f;
  raw.max_new_tokens = 6;
  raw.ignore_eos = 1;
  ASSERT_EQ(zl_client_submit_raw(client, &raw), ZL_OK);
  ShmResult packed = read_until_terminal(client, 1000);
  EXPECT_EQ(packed.tokens, chat.tokens);
  EXPECT_EQ(packed.terminal.num_prompt_tokens, chat.terminal.num_prompt_tokens);

  zl_request empty;
  zl_request_init(&empty);
  EXPECT_EQ(zl_client_submit(client, &empty, &id), ZL_ERR_INVALID);
  EXPECT_NE(std::string(zl_client_last_error(client)).find("messages"), std::string::npos);
  zl_client_close(client);
}

TEST_F(ShmServerTest, CancelEndsWithAborted) {
  std::vector<int32_t> prompt = {1, 2, 3};
  zl_request request = greedy_request(prompt, 900);
  uint64_t id = 0;
  ASSERT_EQ(zl_client_submit(client_, &request, &id), ZL_OK);
  zl_event event;
  ASSERT_EQ(zl_client_next_event(client_, &event, 5000), ZL_OK);
  ASSERT_EQ(event.record.kind, uint32_t(ZL_SHM_RESPONSE_TOKEN)) << std::string(event.record.text, event.record.text_bytes);
  ASSERT_EQ(zl_client_cancel(client_, id), ZL_OK);
  ShmResult result = read_until_terminal(client_, id);
  ASSERT_EQ(result.status, ZL_OK) << result.tokens.size() << " tokens; stats: overflows "
                                  << server_->stats().num_overflows << " running " << engine_->stats().num_running;
  EXPECT_EQ(result.terminal.finish_reason, uint32_t(ZL_SHM_FINISH_ABORTED));
  EXPECT_LT(result.terminal.num_generated_tokens, 900);
}

TEST_F(ShmServerTest, LiveSegmentIsRefused) {
  auto second = ShmServer::start(*engine_, {name_, 16 << 20});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(name_), std::string::npos) << second.status().message();
}

TEST_F(ShmServerTest, ManyConcurrentClientsGetOneTerminalEach) {
  constexpr int kThreads = 16, kRequests = 20;
  std::mutex mutex;
  std::vector<std::string> failures;
  auto fail = [&](int t, const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex);
    failures.push_back("client " + std::to_string(t) + ": " + what);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      zl_client* client = nullptr;
      if (zl_client_connect(name_.c_str(), &client) != ZL_OK) return fail(t, zl_client_last_error(nullptr));
      std::map<uint64_t, int> terminals;
      std::vector<int32_t> prompt = {t + 1, 2, 3};
      for (int i = 0; i < kRequests; ++i) {
        zl_request request = greedy_request(prompt, 1 + (i % 5));
        uint64_t id = 0;
        if (int status = zl_client_submit(client, &request, &id); status != ZL_OK)
          fail(t, std::string("submit: ") + zl_client_last_error(client));
        terminals[id] = 0;
      }
      int remaining = kRequests;
      zl_event event;
      while (remaining > 0) {
        if (zl_client_next_event(client, &event, 10000) != ZL_OK) {
          fail(t, std::string("next_event: ") + zl_client_last_error(client));
          break;
        }
        if (!zl_event_is_terminal(&event)) continue;
        terminals[event.record.client_request_id]++;
        if (event.record.kind != ZL_SHM_RESPONSE_FINISH)
          fail(t, "error record: " + std::string(event.record.text, event.record.text_bytes));
        remaining--;
      }
      for (auto& [id, n] : terminals)
        if (n != 1) fail(t, "request " + std::to_string(id) + " got " + std::to_string(n) + " terminal records");
      zl_client_close(client);
    });
  }
  for (auto& thread : threads) thread.join();
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  EXPECT_EQ(server_->stats().num_submitted, kThreads * kRequests);
}

}  // namespace
}  // namespace zl::test
