// tokenizer.json loading on small synthetic files: the pipeline pieces
// (byte-level BPE, SentencePiece-style byte fallback, added tokens) and every
// kind of malformed file. Needs nothing from ../shared.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/unicode_util.h"

namespace zl {
namespace {

using Json = nlohmann::json;

// Byte-level BPE over the 256 byte characters plus "he", "ll", "hell", and an
// added special token <|eot|> (id 259).
Json byte_level_json() {
  Json vocab = Json::object();
  for (int b = 0; b < 256; ++b) vocab[unicode::byte_to_char_utf8(static_cast<uint8_t>(b))] = b;
  vocab["he"] = 256;
  vocab["ll"] = 257;
  vocab["hell"] = 258;
  Json root;
  root["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array({"h e", Json::array({"l", "l"}), "he ll"})}};
  root["added_tokens"] = Json::array({{{"id", 259}, {"content", "<|eot|>"}, {"special", true}, {"normalized", false}}});
  root["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  root["decoder"] = {{"type", "ByteLevel"}};
  root["post_processor"] = {{"type", "TemplateProcessing"},
                            {"single", Json::array({{{"SpecialToken", {{"id", "<|eot|>"}}}}, {{"Sequence", {{"id", "A"}}}}})},
                            {"special_tokens", {{"<|eot|>", {{"id", "<|eot|>"}, {"ids", {259}}}}}}};
  return root;
}

StatusOr<std::unique_ptr<Tokenizer>> load(const Json& json, const std::string& name = "tokenizer.json") {
  return load_hf_tokenizer_json(test::write_temp_file(name, json.dump()), "");
}

int32_t byte_id(char c) { return static_cast<uint8_t>(c); }

TEST(HfTokenizer, ByteLevelBpeMergesAndAddedTokens) {
  auto tok = load(byte_level_json());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("hello", false), (std::vector<int32_t>{258, byte_id('o')}));
  EXPECT_EQ((*tok)->encode("hello", true), (std::vector<int32_t>{259, 258, byte_id('o')}));
  EXPECT_EQ((*tok)->encode("a<|eot|>b", false), (std::vector<int32_t>{byte_id('a'), 259, byte_id('b')}));
  // parse_special=false: the special token is plain text.
  EXPECT_EQ((*tok)->encode("<|eot|>", false, false).size(), 7u);
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{259, 258, byte_id('o')}, true), "hello");
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{259, 258, byte_id('o')}, false), "<|eot|>hello");
  EXPECT_EQ((*tok)->vocab_size(), 260);
  EXPECT_TRUE((*tok)->is_special(259));
  EXPECT_FALSE((*tok)->is_special(258));
  EXPECT_EQ((*tok)->token_text(258), "hell");
  EXPECT_TRUE((*tok)->special_ids().add_bos);
  EXPECT_EQ((*tok)->special_ids().bos, 259);
}

TEST(HfTokenizer, InvalidUtf8NeverCrashes) {
  auto tok = load(byte_level_json());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const std::string bad = "a\xff\xfe\xc3(\xe2\x82\xf0\x9f\x98 \xed\xa0\x80z";
  const auto ids = (*tok)->encode(bad, false);
  EXPECT_EQ((*tok)->decode(ids), unicode::to_valid_utf8(bad));
  // Lone byte ids decode to U+FFFD, and out-of-range ids are skipped.
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{0xC3, -5, 100000}), "\xEF\xBF\xBD");
}

TEST(HfTokenizer, SentencePieceStyleByteFallback) {
  Json vocab = Json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 2 + b;
  }
  vocab["\xE2\x96\x81"] = 258;  // ▁
  vocab["h"] = 259;
  vocab["i"] = 260;
  vocab["\xE2\x96\x81h"] = 261;
  vocab["\xE2\x96\x81hi"] = 262;
  Json root;
  root["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"\xE2\x96\x81 h", "\xE2\x96\x81h i"}},
                   {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}};
  root["normalizer"] = {{"type", "Sequence"}, {"normalizers", Json::array({
      {{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}})}};
  root["decoder"] = {{"type", "Sequence"}, {"decoders", Json::array({
      {{"type", "Replace"}, {"pattern", {{"String", "\xE2\x96\x81"}}}, {"content", " "}},
      {{"type", "ByteFallback"}}, {{"type", "Fuse"}}, {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  root["added_tokens"] = Json::array({{{"id", 1}, {"content", "<s>"}, {"special", true}, {"normalized", false}}});
  auto tok = load(root);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // "é" is not in the vocab: its two UTF-8 bytes become <0xC3> <0xA9>.
  const auto ids = (*tok)->encode("hi \xC3\xA9", false);
  EXPECT_EQ(ids, (std::vector<int32_t>{262, 258, 2 + 0xC3, 2 + 0xA9}));
  EXPECT_EQ((*tok)->decode(ids), "hi \xC3\xA9");
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{1, 262}, false), "<s> hi");
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{262, 2 + 0xC3}), "hi\xEF\xBF\xBD");
}

struct BadCase {
  const char* name;
  StatusCode code;
  const char* message_part;
};

void expect_error(const StatusOr<std::unique_ptr<Tokenizer>>& result, StatusCode code, const std::string& part) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), code) << result.status().to_string();
  EXPECT_NE(result.status().message().find(part), std::string::npos) << result.status().to_string();
}

TEST(HfTokenizerBadFile, MissingFileAndNotJson) {
  expect_error(load_hf_tokenizer_json(test::temp_dir() + "/nope.json", ""), StatusCode::kNotFound, "nope.json");
  const std::string path = test::write_temp_file("garbage.json", "{\"model\": [1, 2");
  expect_error(load_hf_tokenizer_json(path, ""), StatusCode::kDataLoss, "garbage.json");
  expect_error(load_hf_tokenizer_json(test::write_temp_file("array.json", "[1]"), ""), StatusCode::kDataLoss,
               "top level");
}

TEST(HfTokenizerBadFile, EachBrokenField) {
  Json json = byte_level_json();
  json["model"]["type"] = "WordPiece";
  expect_error(load(json, "wordpiece.json"), StatusCode::kUnimplemented, "WordPiece");

  json = byte_level_json();
  json["model"]["vocab"]["he"] = -3;
  expect_error(load(json, "negative.json"), StatusCode::kDataLoss, "out of range");
  json["model"]["vocab"]["he"] = int64_t{1} << 40;
  expect_error(load(json, "huge.json"), StatusCode::kDataLoss, "out of range");
  // One id near 2^26 used to size a 2 GiB id table (the fuzzer's out-of-memory).
  json["model"]["vocab"]["he"] = int64_t{1} << 22;
  expect_error(load(json, "sparse.json"), StatusCode::kDataLoss, "has id 4194304, out of range");
  json["model"]["vocab"]["he"] = "x";
  expect_error(load(json, "string_id.json"), StatusCode::kDataLoss, "not an integer");

  json = byte_level_json();
  json["model"]["merges"].push_back("q zzz");
  expect_error(load(json, "unknown_merge.json"), StatusCode::kDataLoss, "merge 3");
  json["model"]["merges"].back() = "q u";  // "qu" is not in the vocab
  expect_error(load(json, "merge_result.json"), StatusCode::kDataLoss, "not in the vocab");
  json["model"]["merges"].back() = 7;
  expect_error(load(json, "merge_type.json"), StatusCode::kDataLoss, "merge 3");
  json["model"].erase("merges");
  expect_error(load(json, "no_merges.json"), StatusCode::kDataLoss, "merges");

  json = byte_level_json();
  json["added_tokens"][0]["id"] = "259";
  expect_error(load(json, "added_id.json"), StatusCode::kDataLoss, "added_tokens[0]");

  json = byte_level_json();
  json["post_processor"]["special_tokens"] = Json::object();
  expect_error(load(json, "template.json"), StatusCode::kDataLoss, "<|eot|>");

  json = byte_level_json();
  json["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  expect_error(load(json, "pre.json"), StatusCode::kUnimplemented, "BertPreTokenizer");
  json["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error(load(json, "regex.json"), StatusCode::kInvalidArgument, "regex.json");

  json = byte_level_json();
  json["normalizer"] = {{"type", "Precompiled"}};
  expect_error(load(json, "normalizer.json"), StatusCode::kUnimplemented, "Precompiled");
  json = byte_level_json();
  json["decoder"] = {{"type", "WordPiece"}};
  expect_error(load(json, "decoder.json"), StatusCode::kUnimplemented, "WordPiece");
}

TEST(GgufBpeVocab, ControlTokensAndErrors) {
  VocabData vocab;
  vocab.model = "gpt2";
  vocab.pre = "something-new";  // unknown: GPT-2 regex with a warning
  for (int b = 0; b < 256; ++b) vocab.tokens.push_back(unicode::byte_to_char_utf8(static_cast<uint8_t>(b)));
  vocab.tokens.push_back("he");
  vocab.tokens.push_back("<|end|>");
  vocab.token_types.assign(vocab.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  vocab.token_types.back() = static_cast<int32_t>(TokenType::kControl);
  vocab.merges = {"h e"};
  vocab.eos_id = 257;
  auto tok = make_bpe_tokenizer_from_vocab(vocab);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->encode("he<|end|>", false), (std::vector<int32_t>{256, 257}));
  EXPECT_EQ((*tok)->decode(std::vector<int32_t>{256, 257}, true), "he");
  EXPECT_EQ((*tok)->special_ids().eos, 257);

  vocab.merges = {"h x"};
  expect_error(make_bpe_tokenizer_from_vocab(vocab), StatusCode::kDataLoss, "merge 0");
  vocab.merges = {"h e"};
  vocab.model = "llama";
  expect_error(make_bpe_tokenizer_from_vocab(vocab), StatusCode::kInvalidArgument, "gpt2");
}

TEST(GgufBpeVocab, EveryKnownPreNameBuilds) {
  VocabData vocab;
  vocab.model = "gpt2";
  for (int b = 0; b < 256; ++b) vocab.tokens.push_back(unicode::byte_to_char_utf8(static_cast<uint8_t>(b)));
  for (const char* pre : {"gpt2", "default", "llama-bpe", "llama3", "qwen2", "smollm", "falcon", "dbrx", "tekken",
                          "gpt-4o", "llama4"}) {
    vocab.pre = pre;
    auto tok = make_bpe_tokenizer_from_vocab(vocab);
    ASSERT_TRUE(tok.ok()) << pre << ": " << tok.status().to_string();
    const std::string text = "Hello, World's 12345 \xF0\x9F\x99\x82\n\n  x";
    EXPECT_EQ((*tok)->decode((*tok)->encode(text, false)), text) << pre;
  }
}

TEST(Unicode, NfcComposesAndReorders) {
  EXPECT_EQ(unicode::nfc("cafe\xCC\x81"), "caf\xC3\xA9");              // e + acute
  EXPECT_EQ(unicode::nfc("\xE2\x84\xAB"), "\xC3\x85");                 // Angstrom sign -> Å
  EXPECT_EQ(unicode::nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // jamo -> 각
  EXPECT_EQ(unicode::nfc("a\xCC\xA3\xCC\x81"), "\xE1\xBA\xA1\xCC\x81");  // dot below sorts first
}

}  // namespace
}  // namespace zl
