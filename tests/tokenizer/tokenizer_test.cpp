// load_tokenizer / make_tokenizer_from_vocab dispatch and their errors. The
// formats themselves are tested in their own files.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace zl {
namespace {

TEST(TokenizerDispatchTest, MissingPathIsNotFoundAndNamesIt) {
  std::string path = test::temp_dir() + "/no_such_tokenizer";
  auto tok = load_tokenizer(path);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find(path), std::string::npos);
  EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos);
}

TEST(TokenizerDispatchTest, EmptyDirectoryNamesWhatWasLookedFor) {
  std::string dir = test::temp_dir() + "/empty_model_dir";
  std::filesystem::create_directories(dir);
  auto tok = load_tokenizer(dir);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find(dir), std::string::npos);
  EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos);
  EXPECT_NE(tok.status().message().find("tokenizer.model"), std::string::npos);
}

TEST(TokenizerDispatchTest, CorruptModelFileIsAnErrorNamingTheFile) {
  std::string path = test::write_temp_file("corrupt/tokenizer.model", "this is not a protobuf\x01\x02");
  auto tok = load_tokenizer(path);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find(path), std::string::npos) << tok.status().message();
  // The directory form reaches the same loader.
  auto from_dir = load_tokenizer(std::filesystem::path(path).parent_path().string());
  ASSERT_FALSE(from_dir.ok());
  EXPECT_NE(from_dir.status().message().find("tokenizer.model"), std::string::npos);
}

TEST(TokenizerDispatchTest, UnknownVocabModelIsUnimplemented) {
  VocabData v;
  v.model = "bert";
  v.tokens = {"[UNK]", "a"};
  auto tok = make_tokenizer_from_vocab(v);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(tok.status().message().find("bert"), std::string::npos);
}

TEST(TokenizerDispatchTest, InvalidVocabIsRejectedBeforeDispatch) {
  VocabData v;
  v.model = "llama";
  v.tokens = {"<unk>", "a"};
  v.scores = {0.0f};
  auto tok = make_tokenizer_from_vocab(v);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("scores"), std::string::npos);
}

}  // namespace
}  // namespace zl
