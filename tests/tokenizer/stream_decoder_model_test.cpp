// StreamDecoder's ContinuationPieces fast path on real vocabularies: for every
// tokenizer in ../shared/tokenizers, the corpus streamed id by id with the
// table gives exactly the pieces of the windowed decoder without it, and
// their concatenation is decode() of the whole (skipping specials or not).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer_golden.h"
#include "tokenizer/tokenizer.h"

namespace zl {
namespace {

class StreamPiecesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StreamPiecesTest, FastPathEqualsWindowedDecoding) {
  std::string dir = test::shared_path("tokenizers/" + GetParam());
  if (dir.empty() || !std::filesystem::exists(dir)) GTEST_SKIP() << "../shared/tokenizers/" << GetParam() << " is missing";
  auto tok = load_tokenizer(dir);
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const Tokenizer& t = **tok;
  ContinuationPieces table(t);
  nlohmann::json corpus = nlohmann::json::parse(test::read_text_file(test::golden_path("tokenizer/corpus.json")));
  std::vector<int32_t> all;  // one long stream: many window moves and fast-path switches
  for (const auto& text : corpus) {
    auto ids = t.encode(text.get<std::string>(), true, true);
    all.insert(all.end(), ids.begin(), ids.end());
  }
  for (bool skip : {true, false}) {
    StreamDecoder slow(t, skip), fast(t, skip, &table);
    std::string streamed;
    int num_diffs = 0;
    for (size_t i = 0; i < all.size(); ++i) {
      std::string piece = slow.push(all[i]);
      if (fast.push(all[i]) != piece && ++num_diffs <= 3) ADD_FAILURE() << "piece " << i << " differs";
      streamed += piece;
    }
    std::string rest = slow.flush();
    EXPECT_EQ(fast.flush(), rest);
    EXPECT_EQ(num_diffs, 0) << GetParam() << " skip_special=" << skip;
    EXPECT_EQ(streamed + rest, t.decode(all, skip));
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, StreamPiecesTest,
                         ::testing::Values("gpt2", "smollm2-135m-instruct", "pythia-70m", "phi-2", "falcon-7b",
                                           "llama-2", "mistral-7b-instruct-v0.3", "phi-3-mini-4k-instruct"),
                         test::folder_test_name);

}  // namespace
}  // namespace zl
