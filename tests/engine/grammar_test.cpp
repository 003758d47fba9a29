// Structured output through the public engine API on dummy:tiny (random
// weights, byte tokenizer): whatever the weights prefer, the output is in the
// grammar's language, ends with kStop once complete (ignore_eos or not), and
// the same with and without overlap scheduling; bad specs are refused at
// submit naming their field.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "collecting_sink.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

using Kind = StructuredOutput::Kind;

std::unique_ptr<Engine> make_engine(bool overlap) {
  EngineConfig config;
  config.model = "dummy:tiny";
  config.num_threads = 2;
  config.max_num_seqs = 16;
  config.max_num_batched_tokens = 128;
  config.kv_cache_bytes = 16 << 20;
  config.overlap_scheduling = overlap;
  auto engine = Engine::create(config);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  return std::move(*engine);
}

Request constrained(Kind kind, std::string spec, float temperature, uint64_t seed,
                    std::shared_ptr<test::CollectingSink> sink) {
  Request r;
  r.prompt_ids = {1, 72, 105, 33};
  r.max_new_tokens = 400;
  r.sampling.temperature = temperature;
  r.sampling.has_seed = true;
  r.sampling.seed = seed;
  r.structured_output.kind = kind;
  r.structured_output.spec = std::move(spec);
  r.structured_output.field = "response_format";
  r.sink = std::move(sink);
  return r;
}

// Runs the requests at once (one batch) and returns their sinks, finished.
std::vector<std::shared_ptr<test::CollectingSink>> run_all(Engine& engine, std::vector<Request> requests) {
  std::vector<std::shared_ptr<test::CollectingSink>> sinks;
  for (Request& r : requests) {
    sinks.push_back(std::static_pointer_cast<test::CollectingSink>(r.sink));
    auto id = engine.submit(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().to_string();
  }
  for (auto& sink : sinks) EXPECT_TRUE(sink->wait());
  return sinks;
}

constexpr const char* kPersonSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "pattern": "^[a-z ]{1,6}$"},
    "note": {"type": "string", "maxLength": 5},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "tags": {"type": "array", "items": {"enum": ["red", "green"]}, "maxItems": 3},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "note", "age", "tags", "ok"],
  "additionalProperties": false
})";

void expect_person(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(j.is_object()) << text;
  EXPECT_EQ(j.size(), 5u) << text;
  ASSERT_TRUE(j["name"].is_string()) << text;
  EXPECT_TRUE(std::regex_match(j["name"].get<std::string>(), std::regex("[a-z ]{1,6}"))) << text;
  // Any characters (raw control characters never: they would not parse),
  // at most 5 of them. The grammar admits only well-formed UTF-8
  // (scripts/fetch_xgrammar.sh's fixes), so bytes count as characters do.
  ASSERT_TRUE(j["note"].is_string()) << text;
  const std::string note = j["note"].get<std::string>();
  EXPECT_LE(std::count_if(note.begin(), note.end(), [](char c) { return (c & 0xC0) != 0x80; }), 5) << text;
  EXPECT_EQ(note.find("\xEF\xBF\xBD"), std::string::npos) << text;  // no U+FFFD: nothing ill-formed
  ASSERT_TRUE(j["age"].is_number_integer()) << text;
  EXPECT_GE(j["age"].get<int64_t>(), 0);
  EXPECT_LE(j["age"].get<int64_t>(), 120);
  ASSERT_TRUE(j["tags"].is_array()) << text;
  EXPECT_LE(j["tags"].size(), 3u);
  for (const auto& tag : j["tags"]) EXPECT_TRUE(tag == "red" || tag == "green") << text;
  EXPECT_TRUE(j["ok"].is_boolean()) << text;
}

class GrammarTest : public ::testing::TestWithParam<bool> {};

TEST_P(GrammarTest, JsonSchemaOutputParsesAndValidates) {
  auto engine = make_engine(GetParam());
  std::vector<Request> requests;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    requests.push_back(constrained(Kind::kJsonSchema, kPersonSchema, seed == 0 ? 0.0f : 1.0f, seed,
                                   std::make_shared<test::CollectingSink>()));
  }
  requests[1].ignore_eos = true;  // the grammar still ends it
  requests[2].sampling.top_p = 0.9f;
  requests[2].sampling.repetition_penalty = 1.3f;
  for (const auto& sink : run_all(*engine, std::move(requests))) {
    EXPECT_EQ(sink->finish.reason, FinishReason::kStop) << sink->text;
    EXPECT_EQ(sink->num_finish_events, 1);
    expect_person(sink->text);
  }
}

TEST_P(GrammarTest, RegexChoiceAndGrammarHoldTheirLanguage) {
  auto engine = make_engine(GetParam());
  std::vector<Request> requests;
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const float t = seed == 0 ? 0.0f : 1.5f;
    requests.push_back(constrained(Kind::kRegex, "[a-c]{3}-[0-9]{2,4}", t, seed, std::make_shared<test::CollectingSink>()));
    Request choice = constrained(Kind::kChoice, "", t, seed, std::make_shared<test::CollectingSink>());
    choice.structured_output.choices = {"yes", "no", "maybe \"so\"\n"};
    requests.push_back(std::move(choice));
    requests.push_back(constrained(Kind::kGrammar, R"g(root ::= "(" num ("+" num)* ")"
num ::= [1-9] [0-9]?)g", t, seed, std::make_shared<test::CollectingSink>()));
  }
  const auto sinks = run_all(*engine, std::move(requests));
  const std::regex expr(R"(\((?:[1-9][0-9]?)(?:\+[1-9][0-9]?)*\))");
  for (size_t i = 0; i < sinks.size(); i += 3) {
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(sinks[i + k]->finish.reason, FinishReason::kStop) << sinks[i + k]->text;
    EXPECT_TRUE(std::regex_match(sinks[i]->text, std::regex("[a-c]{3}-[0-9]{2,4}"))) << sinks[i]->text;
    EXPECT_TRUE((std::set<std::string>{"yes", "no", "maybe \"so\"\n"}.count(sinks[i + 1]->text))) << sinks[i + 1]->text;
    // Random weights may go on adding terms until max_new_tokens.
    if (sinks[i + 2]->finish.reason == FinishReason::kStop) {
      EXPECT_TRUE(std::regex_match(sinks[i + 2]->text, expr)) << sinks[i + 2]->text;
    }
  }
}

TEST_P(GrammarTest, JsonObjectIsAnObjectWhenItEnds) {
  auto engine = make_engine(GetParam());
  std::vector<Request> requests;
  for (uint64_t seed = 0; seed < 4; ++seed)
    requests.push_back(constrained(Kind::kJsonObject, "", 1.0f, seed, std::make_shared<test::CollectingSink>()));
  int ended = 0;
  for (const auto& sink : run_all(*engine, std::move(requests))) {
    if (sink->finish.reason != FinishReason::kStop) continue;  // an endless string on random weights
    ++ended;
    EXPECT_TRUE(nlohmann::json::parse(sink->text, nullptr, false).is_object()) << sink->text;
  }
  EXPECT_GT(ended, 0);
}

TEST_P(GrammarTest, GreedyOutputIsTheSameWithAndWithoutOverlap) {
  auto engine = make_engine(GetParam());
  auto other = make_engine(!GetParam());
  auto a = run_all(*engine, {constrained(Kind::kJsonSchema, kPersonSchema, 0.0f, 0, std::make_shared<test::CollectingSink>())});
  auto b = run_all(*other, {constrained(Kind::kJsonSchema, kPersonSchema, 0.0f, 0, std::make_shared<test::CollectingSink>())});
  EXPECT_EQ(a[0]->tokens, b[0]->tokens);
  EXPECT_FALSE(a[0]->text.empty());
}

// StructuredOutput::after_ids: the output is free until it writes them (a
// reasoning's end), then in the grammar's language.
TEST_P(GrammarTest, GrammarHoldsOnlyAfterItsTrigger) {
  auto engine = make_engine(GetParam());
  Request free_run = constrained(Kind::kNone, "", 0.0f, 0, std::make_shared<test::CollectingSink>());
  free_run.max_new_tokens = 8;
  free_run.ignore_eos = true;
  const std::vector<int32_t> greedy = run_all(*engine, {std::move(free_run)})[0]->tokens;
  ASSERT_EQ(greedy.size(), 8u);
  // The trigger is the greedy output's tokens 2 and 3; it ends the free part
  // where it first appears.
  const std::vector<int32_t> trigger = {greedy[2], greedy[3]};
  const size_t free_len = static_cast<size_t>(std::search(greedy.begin(), greedy.end(), trigger.begin(), trigger.end()) -
                                              greedy.begin()) + 2;
  Request r = constrained(Kind::kRegex, "[a-c]{3}-[0-9]{2,4}", 0.0f, 0, std::make_shared<test::CollectingSink>());
  r.structured_output.after_ids = trigger;
  const auto sink = run_all(*engine, {std::move(r)})[0];
  ASSERT_GE(sink->tokens.size(), free_len);
  EXPECT_TRUE(std::equal(greedy.begin(), greedy.begin() + static_cast<ptrdiff_t>(free_len), sink->tokens.begin()));
  EXPECT_EQ(sink->finish.reason, FinishReason::kStop);
  // The byte tokenizer: id b is byte b (the free part's bytes may not be UTF-8).
  const std::string constrained_part(sink->tokens.begin() + static_cast<ptrdiff_t>(free_len), sink->tokens.end());
  EXPECT_TRUE(std::regex_match(constrained_part, std::regex("[a-c]{3}-[0-9]{2,4}"))) << sink->text;
}

INSTANTIATE_TEST_SUITE_P(Overlap, GrammarTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "On" : "Off"; });

TEST(GrammarSubmitTest, BadSpecsAreRefusedNamingTheirField) {
  auto engine = make_engine(true);
  auto sink = std::make_shared<test::CollectingSink>();
  auto expect_refused = [&](Request r) {
    const std::string field = r.structured_output.field;
    auto id = engine->submit(std::move(r));
    ASSERT_FALSE(id.ok()) << field;
    EXPECT_EQ(id.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(id.status().message().rfind(field + ": ", 0), 0u) << id.status().message();
  };
  expect_refused(constrained(Kind::kJsonSchema, "{\"type\": ", 0.0f, 0, sink));
  Request regex = constrained(Kind::kRegex, "[a-", 0.0f, 0, sink);
  regex.structured_output.field = "guided_regex";
  expect_refused(std::move(regex));
  Request grammar = constrained(Kind::kGrammar, "root ::= undefined_rule", 0.0f, 0, sink);
  grammar.structured_output.field = "guided_grammar";
  expect_refused(std::move(grammar));
  Request choice = constrained(Kind::kChoice, "", 0.0f, 0, sink);
  choice.structured_output.field = "guided_choice";
  expect_refused(std::move(choice));
  EXPECT_EQ(sink->num_finish_events, 0);
}

TEST(GrammarSubmitTest, ACompiledGrammarServesManyRequests) {
  auto engine = make_engine(true);
  StructuredOutput output;
  output.kind = Kind::kRegex;
  output.spec = "(ab|cd){2}";
  ASSERT_TRUE(engine->compile_grammar(output).ok());
  ASSERT_TRUE(output.compiled);
  std::vector<Request> requests;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    Request r = constrained(Kind::kRegex, "", 1.0f, seed, std::make_shared<test::CollectingSink>());
    r.structured_output = output;
    requests.push_back(std::move(r));
  }
  for (const auto& sink : run_all(*engine, std::move(requests)))
    EXPECT_TRUE(std::regex_match(sink->text, std::regex("(ab|cd){2}"))) << sink->text;
}

}  // namespace
}  // namespace zl
