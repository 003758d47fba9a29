#include "tokenizer/vocab_check.h"

#include <gtest/gtest.h>

namespace zl {
namespace {

VocabData small_vocab() {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>", "a"};
  v.scores = {0, 0, 0, -1};
  v.token_types = {2, 3, 3, 1};
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

void expect_error_naming(const VocabData& v, const std::string& field) {
  Status s = validate_vocab(v);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  EXPECT_NE(s.message().find(field), std::string::npos) << s.message();
}

TEST(VocabCheckTest, AcceptsConsistentVocab) {
  EXPECT_TRUE(validate_vocab(small_vocab()).ok());
  VocabData v = small_vocab();
  v.scores.clear();
  v.token_types.clear();
  EXPECT_TRUE(validate_vocab(v).ok());
}

TEST(VocabCheckTest, RejectsBadFields) {
  VocabData v = small_vocab();
  v.tokens.clear();
  expect_error_naming(v, "tokens");
  v = small_vocab();
  v.tokens[3] = "";
  expect_error_naming(v, "tokens[3]");
  v = small_vocab();
  v.scores.pop_back();
  expect_error_naming(v, "scores");
  v = small_vocab();
  v.token_types.push_back(1);
  expect_error_naming(v, "token_types");
  v = small_vocab();
  v.token_types[0] = 9;
  expect_error_naming(v, "token_types[0]");
  v = small_vocab();
  v.bos_id = 4;
  expect_error_naming(v, "bos_id");
  v = small_vocab();
  v.eos_id = -2;
  expect_error_naming(v, "eos_id");
  v = small_vocab();
  v.pad_id = 100;
  expect_error_naming(v, "pad_id");
  v = small_vocab();
  v.unk_id = 7;
  expect_error_naming(v, "unk_id");
  v = small_vocab();
  v.eot_ids = {2, -1};
  expect_error_naming(v, "eot_ids[1]");
}

}  // namespace
}  // namespace zl
