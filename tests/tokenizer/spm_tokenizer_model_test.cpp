// tokenizer.model (libsentencepiece) against the sentencepiece goldens and
// llama.cpp's llama-spm vocab test, plus special-token handling.
#include "tokenizer/spm_tokenizer.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_golden.h"

namespace zl {
namespace {

std::unique_ptr<Tokenizer> load_shared(const std::string& rel) {
  std::string path = test::shared_path(rel);
  if (path.empty()) return nullptr;
  auto tok = load_tokenizer(path);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return tok.ok() ? std::move(*tok) : nullptr;
}

void check_goldens(const std::string& folder) {
  auto tok = load_shared("tokenizers/" + folder + "/tokenizer.model");
  if (!tok) GTEST_SKIP() << "../shared is missing";
  auto rows = test::read_golden_rows(test::golden_path("tokenizer/corpus.json"),
                                     test::golden_path("tokenizer/" + folder + ".sentencepiece.jsonl"));
  ASSERT_GT(rows.size(), 300u);
  int failures = 0;
  for (const auto& row : rows) {
    // The goldens are plain sentencepiece, which never parses control pieces.
    auto a = tok->encode(row.text, true, false);
    auto n = tok->encode(row.text, false, false);
    std::string d1 = tok->decode(a, true);
    std::string d0 = tok->decode(n, true);
    bool ok = a == row.with_special && n == row.without_special && d1 == row.decoded_a &&
              d0 == row.decoded_n;
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << folder << ": mismatch for " << nlohmann::json(row.text).dump()
                    << " decoded " << nlohmann::json(d1).dump();
    }
  }
  EXPECT_EQ(failures, 0) << "of " << rows.size();
}

TEST(SpmTokenizerModelTest, Llama2MatchesSentencepieceGoldens) { check_goldens("llama-2"); }

TEST(SpmTokenizerModelTest, MistralV3MatchesSentencepieceGoldens) {
  check_goldens("mistral-7b-instruct-v0.3");
}

TEST(SpmTokenizerModelTest, Llama2MatchesLlamaCppVocabTest) {
  auto tok = load_shared("tokenizers/llama-2/tokenizer.model");
  if (!tok) GTEST_SKIP() << "../shared is missing";
  std::string base = test::shared_path("tokenizers/llama.cpp-vocab-tests/ggml-vocab-llama-spm.gguf");
  auto cases = test::read_vocab_tests(base + ".inp", base + ".out");
  ASSERT_GT(cases.size(), 30u);
  for (const auto& c : cases) {
    EXPECT_EQ(tok->encode(c.text, false, false), c.ids) << nlohmann::json(c.text).dump();
  }
}

TEST(SpmTokenizerModelTest, Llama2SpecialsAndConfig) {
  auto tok = load_shared("tokenizers/llama-2/tokenizer.model");
  if (!tok) GTEST_SKIP() << "../shared is missing";
  const SpecialTokenIds& s = tok->special_ids();
  EXPECT_EQ(s.bos, 1);
  EXPECT_EQ(s.eos, 2);
  EXPECT_EQ(s.unk, 0);
  EXPECT_EQ(s.pad, -1);
  EXPECT_TRUE(s.add_bos);
  EXPECT_FALSE(s.add_eos);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->token_text(15043), "\xE2\x96\x81Hello");
  EXPECT_TRUE(tok->is_special(1));
  EXPECT_FALSE(tok->is_special(15043));
  // Legacy LlamaTokenizer / llama.cpp: each segment gets the dummy prefix.
  EXPECT_EQ(tok->encode("<s>Hello</s>", false, true), (std::vector<int32_t>{1, 15043, 2}));
  EXPECT_EQ(tok->encode("Hello<s>", true, true), (std::vector<int32_t>{1, 15043, 1}));
  std::vector<int32_t> plain = tok->encode("<s>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok->decode(plain), "<s>");
  std::vector<int32_t> ids = {1, 15043, 3186, 2};
  EXPECT_EQ(tok->decode(ids, true), "Hello world");
  EXPECT_EQ(tok->decode(ids, false), "<s> Hello world</s>");
}

TEST(SpmTokenizerModelTest, ConfigOverridesAddBos) {
  std::string model = test::shared_path("tokenizers/llama-2/tokenizer.model");
  if (model.empty()) GTEST_SKIP() << "../shared is missing";
  std::string dir = test::temp_dir() + "/no_bos";
  test::write_temp_file("no_bos/tokenizer_config.json",
                        R"({"add_bos_token": false, "add_eos_token": true})");
  auto tok = load_spm_tokenizer(model, dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("Hello"), (std::vector<int32_t>{15043, 2}));

  test::write_temp_file("bad_config/tokenizer_config.json", "{not json");
  auto bad = load_spm_tokenizer(model, test::temp_dir() + "/bad_config");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tokenizer_config.json"), std::string::npos);
}

TEST(SpmTokenizerModelTest, MistralNonLegacySpecials) {
  auto tok = load_shared("tokenizers/mistral-7b-instruct-v0.3/tokenizer.model");
  if (!tok) GTEST_SKIP() << "../shared is missing";
  auto inst = tok->encode("[INST]", false, true);
  ASSERT_EQ(inst.size(), 1u);
  EXPECT_EQ(inst[0], 3);
  auto hi = tok->encode("Hi", false, false);  // starts with "▁Hi"
  // legacy=false: no "▁" after a special token, one at the start of the text.
  auto got = tok->encode("[INST]Hi[/INST]", true, true);
  ASSERT_GE(got.size(), 4u);
  EXPECT_EQ(got.front(), 1);
  EXPECT_EQ(got[1], 3);
  EXPECT_EQ(got.back(), 4);
  EXPECT_NE(got[2], hi[0]) << "segment after [INST] must not get the dummy prefix";
  EXPECT_EQ(tok->decode(got, false), "<s>[INST]Hi[/INST]");
  EXPECT_EQ(tok->encode("Hi [INST]", false, true).front(), hi.front());
}

TEST(SpmTokenizerModelTest, StreamDecoderMatchesDecodeOnCorpus) {
  auto tok = load_shared("tokenizers/llama-2/tokenizer.model");
  if (!tok) GTEST_SKIP() << "../shared is missing";
  nlohmann::json corpus =
      nlohmann::json::parse(test::read_text_file(test::golden_path("tokenizer/corpus.json")));
  std::vector<int32_t> all;
  for (const auto& text : corpus) {
    auto ids = tok->encode(text.get<std::string>(), true, true);
    StreamDecoder dec(*tok);
    std::string streamed;
    for (int32_t id : ids) streamed += dec.push(id);
    streamed += dec.flush();
    EXPECT_EQ(streamed, tok->decode(ids)) << nlohmann::json(text).dump();
    all.insert(all.end(), ids.begin(), ids.end());
  }
  // One long generation crosses many window moves; the fast path too.
  ContinuationPieces table(*tok);
  for (bool skip : {true, false}) {
    const ContinuationPieces* no_table = nullptr;
    for (const ContinuationPieces* pieces : {no_table, static_cast<const ContinuationPieces*>(&table)}) {
      StreamDecoder dec(*tok, skip, pieces);
      std::string streamed;
      for (int32_t id : all) streamed += dec.push(id);
      streamed += dec.flush();
      EXPECT_EQ(streamed, tok->decode(all, skip)) << (pieces ? "with" : "without") << " ContinuationPieces";
    }
  }
}

TEST(SpmTokenizerModelTest, CorruptModelNamesTheFile) {
  std::string path = test::write_temp_file("corrupt.model", std::string("\x0a\xff\xff\xff\x0fgarbage", 12));
  auto tok = load_spm_tokenizer(path, "");
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(tok.status().message().find(path), std::string::npos) << tok.status().message();
  auto missing = load_spm_tokenizer(path + ".nope", "");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace zl
