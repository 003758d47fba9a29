// A grammar sees each token's exact bytes, as each tokenizer spells them
// (Tokenizer::token_spelling: GPT-2 byte-level, SentencePiece pieces and
// <0xAB> byte tokens, raw): for real vocabularies in ../shared, a grammar
// that admits one text admits, token by token, that text as the tokenizer
// encodes it (spaces, newlines, tabs, multi-byte and byte-fallback
// characters), then ends on eos; and its mask never hides the next token.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/grammar.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

// Has a space at the start, a newline, a tab, JSON punctuation, 2-, 3- and
// 4-byte UTF-8 (the last two mostly byte-fallback tokens in SentencePiece).
constexpr const char* kText = "The answer: {\"k\": [1, 2]}\n\tna\xC3\xAFve caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xE2\x9C\x93 \xF0\x9F\x98\x80";

std::string ebnf_literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    if (c == '\t') { out += "\\t"; continue; }
    out += c;
  }
  return out + "\"";
}

class GrammarTokenizerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GrammarTokenizerTest, GrammarAcceptsTheTextAsEncoded) {
  const std::string path = test::shared_path(std::string("tokenizers/") + GetParam());
  if (path.empty()) GTEST_SKIP() << "../shared is missing";
  auto tokenizer = load_tokenizer(path);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status().to_string();
  const Tokenizer& tok = **tokenizer;
  const int32_t eos = tok.special_ids().eos;
  ASSERT_GE(eos, 0);
  GrammarCompiler compiler(tok, tok.vocab_size(), {eos});
  StructuredOutput output;
  output.kind = StructuredOutput::Kind::kGrammar;
  // SentencePiece encodes a leading "▁", a space the grammar sees.
  output.spec = "root ::= \" \"? " + ebnf_literal(kText);
  auto compiled = compiler.compile(output);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  GrammarMatcher matcher(*compiled, {});
  const std::vector<int32_t> ids = tok.encode(kText, /*add_special=*/false);
  ASSERT_FALSE(ids.empty());
  std::vector<float> logits(static_cast<size_t>(tok.vocab_size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    matcher.apply_mask(logits.data());
    EXPECT_TRUE(std::isfinite(logits[static_cast<size_t>(ids[i])])) << "token " << i << " '" << tok.token_text(ids[i]) << "' masked";
    ASSERT_EQ(matcher.accept(ids[i]), GrammarStep::kNone) << "token " << i << " '" << tok.token_text(ids[i]) << "'";
  }
  std::fill(logits.begin(), logits.end(), 0.0f);
  matcher.apply_mask(logits.data());
  EXPECT_TRUE(std::isfinite(logits[static_cast<size_t>(eos)]));
  EXPECT_EQ(std::count_if(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }), 1);
  EXPECT_EQ(matcher.accept(eos), GrammarStep::kEnded);
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, GrammarTokenizerTest,
                         ::testing::Values("llama-2/tokenizer.json", "llama-2/tokenizer.model",
                                           "mistral-7b-instruct-v0.3/tokenizer.model", "mistral-7b-instruct-v0.3/tokenizer.json", "gpt2",
                                           "falcon-7b", "phi-3-mini-4k-instruct",
                                           "smollm2-135m-instruct"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace zl
