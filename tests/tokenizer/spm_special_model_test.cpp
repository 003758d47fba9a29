// A tokenizer.model (SentencePiece) loaded with the model's
// tokenizer_config.json, parsing special-token text, against the same model's
// tokenizer.json (HF tokenizers, add_special_tokens=True) on 200 strings full
// of <s>, </s>, [INST], [/INST], [TOOL_CALLS] and spaces around them
// (tests/golden/tokenizer/*.special.jsonl, make_spm_special_goldens.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

TEST(SpmSpecialTest, MistralV03MatchesItsTokenizerJson) {
  const std::string path = test::shared_path("tokenizers/mistral-7b-instruct-v0.3/tokenizer.model");
  if (path.empty()) GTEST_SKIP() << "../shared is missing";
  auto tok = load_tokenizer(path);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::ifstream in(test::golden_path("tokenizer/mistral-7b-instruct-v0.3.special.jsonl"));
  std::string line;
  int rows = 0, failures = 0;
  while (std::getline(in, line)) {
    const nlohmann::json row = nlohmann::json::parse(line);
    const std::string text = row["text"].get<std::string>();
    ++rows;
    if ((*tok)->encode(text, true, true) != row["ids"].get<std::vector<int32_t>>() && ++failures <= 5)
      ADD_FAILURE() << "mismatch for " << nlohmann::json(text).dump();
  }
  EXPECT_EQ(rows, 200);
  EXPECT_EQ(failures, 0);
}

}  // namespace
}  // namespace zl
