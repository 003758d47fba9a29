// The GGUF "llama" tokenizer on the real Llama-2 vocabulary: a VocabData is
// built from tokenizer.model through sentencepiece's API (as a GGUF converter
// would) and checked against llama.cpp's llama-spm vocab test, the
// sentencepiece goldens and libsentencepiece itself.
#include "tokenizer/gguf_spm_tokenizer.h"

#include <gtest/gtest.h>
#include <sentencepiece_processor.h>

#include "bundle/gguf_vocab.h"
#include "model/gguf.h"
#include "test_util.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer_golden.h"

namespace zl {
namespace {

// llama.cpp's token types from sentencepiece's piece types. libsentencepiece
// 0.1.97 has no IsUserDefined; the Llama-2 model has no user-defined pieces.
std::optional<VocabData> llama2_vocab() {
  std::string path = test::shared_path("tokenizers/llama-2/tokenizer.model");
  if (path.empty()) return std::nullopt;
  sentencepiece::SentencePieceProcessor sp;
  if (!sp.Load(path).ok()) return std::nullopt;
  VocabData v;
  v.model = "llama";
  v.pre = "default";
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    v.tokens.push_back(sp.IdToPiece(id));
    v.scores.push_back(sp.GetScore(id));
    TokenType type = TokenType::kNormal;
    if (sp.IsUnknown(id)) type = TokenType::kUnknown;
    else if (sp.IsControl(id)) type = TokenType::kControl;
    else if (sp.IsUnused(id)) type = TokenType::kUnused;
    else if (sp.IsByte(id)) type = TokenType::kByte;
    v.token_types.push_back(static_cast<int32_t>(type));
  }
  v.bos_id = sp.bos_id();
  v.eos_id = sp.eos_id();
  v.unk_id = sp.unk_id();
  v.pad_id = sp.pad_id();
  return v;
}

class GgufSpmModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto vocab = llama2_vocab();
    if (!vocab) GTEST_SKIP() << "../shared/tokenizers/llama-2/tokenizer.model is missing";
    auto tok = make_tokenizer_from_vocab(*vocab);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tok_ = std::move(*tok);
  }
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(GgufSpmModelTest, MatchesLlamaCppVocabTest) {
  std::string base = test::shared_path("tokenizers/llama.cpp-vocab-tests/ggml-vocab-llama-spm.gguf");
  auto cases = test::read_vocab_tests(base + ".inp", base + ".out");
  ASSERT_GT(cases.size(), 30u);
  for (const auto& c : cases) {
    EXPECT_EQ(tok_->encode(c.text, false, false), c.ids) << nlohmann::json(c.text).dump();
    EXPECT_EQ(tok_->encode(c.text, false, true), c.ids) << nlohmann::json(c.text).dump();
  }
}

TEST_F(GgufSpmModelTest, MatchesSentencepieceGoldens) {
  auto rows = test::read_golden_rows(test::golden_path("tokenizer/corpus.json"),
                                     test::golden_path("tokenizer/llama-2.sentencepiece.jsonl"));
  ASSERT_GT(rows.size(), 300u);
  int failures = 0;
  for (const auto& row : rows) {
    auto a = tok_->encode(row.text, true, false);
    std::string d1 = tok_->decode(a);
    bool ok = a == row.with_special && tok_->encode(row.text, false, false) == row.without_special &&
              d1 == row.decoded_a;
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << "mismatch for " << nlohmann::json(row.text).dump() << " decoded "
                    << nlohmann::json(d1).dump();
    }
  }
  EXPECT_EQ(failures, 0) << "of " << rows.size();
}

TEST_F(GgufSpmModelTest, SpecialTokensAndDecodeMatchTheModelTokenizer) {
  auto model = load_spm_tokenizer(test::shared_path("tokenizers/llama-2/tokenizer.model"), "");
  ASSERT_TRUE(model.ok());
  nlohmann::json corpus =
      nlohmann::json::parse(test::read_text_file(test::golden_path("tokenizer/corpus.json")));
  int failures = 0;
  for (const auto& text_json : corpus) {
    std::string text = text_json.get<std::string>();
    auto ids = tok_->encode(text, true, true);
    std::string ours = tok_->decode(ids, false);
    std::string theirs = (*model)->decode(ids, false);
    bool ok = ids == (*model)->encode(text, true, true) && ours == theirs;
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << "mismatch for " << text_json.dump() << ": decoded " << nlohmann::json(ours).dump()
                    << " vs " << nlohmann::json(theirs).dump();
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(tok_->encode("<s>Hello</s>", false, true), (std::vector<int32_t>{1, 15043, 2}));
  EXPECT_TRUE(tok_->special_ids().add_bos);
  EXPECT_EQ(tok_->vocab_size(), 32000);
  EXPECT_TRUE(tok_->is_special(2));
}

// The real 512-token vocabulary of stories260K.gguf (llama2.c's tok512,
// converted by llama.cpp), read through the GGUF reader.
TEST(GgufSpmStoriesTest, Stories260KVocabRoundTrips) {
  std::string path = test::shared_path("models/stories260K.gguf");
  if (path.empty()) GTEST_SKIP() << "../shared is missing";
  auto gguf = read_gguf(path);
  ASSERT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto vocab = gguf_vocab(*gguf);
  ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
  EXPECT_EQ(vocab->model, "llama");
  auto tok = make_tokenizer_from_vocab(*vocab);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->vocab_size(), 512);
  const std::string text = "Once upon a time, there was a little girl named Lily. Grüße!";
  auto ids = (*tok)->encode(text);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], (*tok)->special_ids().bos);
  EXPECT_LT(ids.size(), text.size() / 2) << "merges should shorten plain English";
  EXPECT_EQ((*tok)->decode(ids), text);
}

}  // namespace
}  // namespace zl
