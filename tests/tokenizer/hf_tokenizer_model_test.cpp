// tokenizer.json and GGUF "gpt2" tokenizers against goldens: every corpus
// string of tests/golden/tokenizer (made by `tokenizers`, see
// scripts/golden/make_tokenizer_goldens.py) and llama.cpp's vocab tests.
// The tokenizer files themselves live in ../shared/tokenizers; without it the
// tests skip.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "server/fill_in_middle.h"
#include "test_util.h"
#include "tokenizer_golden.h"
#include "tokenizer/hf_tokenizer.h"

namespace zl {
namespace {

using Json = nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

std::string quoted(const std::string& s) { return Json(s).dump(); }

class HfGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfGoldenTest, MatchesTokenizersOnCorpus) {
  const std::string folder = GetParam();
  const std::string dir = test::shared_path("tokenizers/" + folder);
  if (dir.empty()) GTEST_SKIP() << "../shared/tokenizers is missing";
  auto tok = load_hf_tokenizer_json(dir + "/tokenizer.json", dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();

  const Json corpus = Json::parse(read_file(test::golden_path("tokenizer/corpus.json")));
  const auto lines = split_lines(read_file(test::golden_path("tokenizer/" + folder + ".tokenizer_json.jsonl")));
  ASSERT_EQ(lines.size(), corpus.size() + 1) << "stale golden for " << folder;

  int num_mismatches = 0;
  std::ostringstream report;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i].get<std::string>();
    const Json golden = Json::parse(lines[i + 1]);
    const auto with = golden["a"].get<std::vector<int32_t>>();
    const auto without = golden["n"].get<std::vector<int32_t>>();
    const auto got_with = (*tok)->encode(text, true);
    const auto got_without = (*tok)->encode(text, false);
    const std::string d1 = (*tok)->decode(with, true), d0 = (*tok)->decode(with, false);
    std::string what;
    if (got_with != with) what += " add_special: want " + ids_to_string(with) + " got " + ids_to_string(got_with);
    if (got_without != without) {
      what += " no_special: want " + ids_to_string(without) + " got " + ids_to_string(got_without);
    }
    if (d1 != golden["d1"].get<std::string>()) what += " decode(skip): want " + quoted(golden["d1"]) + " got " + quoted(d1);
    if (d0 != golden["d0"].get<std::string>()) what += " decode(keep): want " + quoted(golden["d0"]) + " got " + quoted(d0);
    if (!what.empty() && ++num_mismatches <= 5) report << "\n  #" << i << " " << quoted(text) << what;
  }
  EXPECT_EQ(num_mismatches, 0) << folder << ": " << num_mismatches << " of " << corpus.size()
                               << " strings differ" << report.str();
}

INSTANTIATE_TEST_SUITE_P(Shared, HfGoldenTest,
                         ::testing::Values("gpt2", "smollm2-135m-instruct", "pythia-70m", "phi-2", "falcon-7b",
                                           "llama-2", "mistral-7b-instruct-v0.3", "phi-3-mini-4k-instruct"),
                         test::folder_test_name);

// llama.cpp's ggml-vocab-*.gguf.inp/.out: strings separated by
// "\n__ggml_vocab_test__\n", one line of ids (no bos) per string.
void check_llama_cpp_vocab_test(const Tokenizer& tok, const std::string& name) {
  const std::string base = test::shared_path("tokenizers/llama.cpp-vocab-tests/ggml-vocab-" + name + ".gguf");
  const std::string inp = read_file(base + ".inp");
  const auto out_lines = split_lines(read_file(base + ".out"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0;;) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;  // the file ends with a separator
    texts.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  ASSERT_EQ(texts.size(), out_lines.size()) << name;
  int num_mismatches = 0;
  std::ostringstream report;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> want;
    std::istringstream line(out_lines[i]);
    for (int32_t id; line >> id;) want.push_back(id);
    const auto got = tok.encode(texts[i], false);
    if (got != want && ++num_mismatches <= 5) {
      report << "\n  #" << i << " " << quoted(texts[i]) << " want " << ids_to_string(want) << " got "
             << ids_to_string(got);
    }
  }
  EXPECT_EQ(num_mismatches, 0) << name << ": " << num_mismatches << " of " << texts.size() << " differ"
                               << report.str();
}

struct VocabCase {
  const char* test_name;
  const char* folder;
};

class LlamaCppJsonTest : public ::testing::TestWithParam<VocabCase> {};

TEST_P(LlamaCppJsonTest, MatchesVocabTest) {
  const std::string dir = test::shared_path(std::string("tokenizers/") + GetParam().folder);
  if (dir.empty()) GTEST_SKIP() << "../shared/tokenizers is missing";
  auto tok = load_hf_tokenizer_json(dir + "/tokenizer.json", dir);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  check_llama_cpp_vocab_test(**tok, GetParam().test_name);
}

INSTANTIATE_TEST_SUITE_P(Shared, LlamaCppJsonTest,
                         ::testing::Values(VocabCase{"gpt-2", "gpt2"}, VocabCase{"llama-spm", "llama-2"},
                                           VocabCase{"phi-3", "phi-3-mini-4k-instruct"},
                                           VocabCase{"falcon", "falcon-7b"}),
                         [](const auto& info) {
                           std::string name = info.param.test_name;
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

// vocab.json / encoder.json: token -> id, into VocabData.tokens by id.
void add_vocab_json(const std::string& path, VocabData* vocab) {
  const Json json = Json::parse(read_file(path));
  for (const auto& [token, id] : json.items()) {
    const size_t index = id.get<size_t>();
    if (vocab->tokens.size() <= index) vocab->tokens.resize(index + 1);
    vocab->tokens[index] = token;
  }
}

void add_merges_txt(const std::string& path, VocabData* vocab) {
  for (const std::string& line : split_lines(read_file(path))) {
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    vocab->merges.push_back(line);
  }
}

TEST(GgufBpe, Qwen2FromVocabJsonAndMerges) {
  const std::string dir = test::shared_path("tokenizers/qwen2.5-0.5b-instruct");
  if (dir.empty()) GTEST_SKIP() << "../shared/tokenizers is missing";
  VocabData vocab;
  vocab.model = "gpt2";
  vocab.pre = "qwen2";
  add_vocab_json(dir + "/vocab.json", &vocab);
  add_merges_txt(dir + "/merges.txt", &vocab);
  vocab.token_types.assign(vocab.tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  const Json config = Json::parse(read_file(dir + "/tokenizer_config.json"));
  for (const auto& [id_text, token] : config["added_tokens_decoder"].items()) {
    const size_t id = std::stoul(id_text);
    if (vocab.tokens.size() <= id) {
      vocab.tokens.resize(id + 1);
      vocab.token_types.resize(id + 1, static_cast<int32_t>(TokenType::kNormal));
    }
    vocab.tokens[id] = token["content"].get<std::string>();
    vocab.token_types[id] = static_cast<int32_t>(token["special"].get<bool>() ? TokenType::kControl
                                                                               : TokenType::kUserDefined);
  }
  auto tok = make_bpe_tokenizer_from_vocab(vocab);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  check_llama_cpp_vocab_test(**tok, "qwen2");
  // Its fill-in-the-middle tokens, by name (the server's `suffix`).
  const std::optional<server::FimTokens> fim = server::find_fim_tokens(**tok);
  ASSERT_TRUE(fim.has_value());
  EXPECT_EQ((*tok)->token_text(fim->prefix), "<|fim_prefix|>");
  EXPECT_EQ((*tok)->token_text(fim->middle), "<|fim_middle|>");
  EXPECT_EQ((*tok)->encode("<|im_start|>user", false).front(), 151644);
  EXPECT_EQ((*tok)->decode((*tok)->encode("Hello, 世界 🙂", false)), "Hello, 世界 🙂");
}

TEST(GgufBpe, Llama3FromEncoderJsonAndVocabBpe) {
  const std::string dir = test::shared_path("tokenizers/llama-3.2");
  if (dir.empty()) GTEST_SKIP() << "../shared/tokenizers is missing";
  VocabData vocab;
  vocab.model = "gpt2";
  vocab.pre = "llama-bpe";
  add_vocab_json(dir + "/encoder.json", &vocab);
  add_merges_txt(dir + "/vocab.bpe", &vocab);
  auto tok = make_bpe_tokenizer_from_vocab(vocab);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  check_llama_cpp_vocab_test(**tok, "llama-bpe");
}

}  // namespace
}  // namespace zl

namespace zl {
namespace {

// Random bytes (invalid UTF-8 included) must never crash, and a large text
// must encode in reasonable time (BPE with a merge queue and a word cache).
TEST(HfTokenizerRobustness, RandomBytesAndLargeText) {
  const std::string dir = test::shared_path("tokenizers");
  if (dir.empty()) GTEST_SKIP() << "../shared/tokenizers is missing";
  uint64_t state = 0x9E3779B97F4A7C15ull;
  const auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::string large;
  const char* words[] = {"the ", "tokenizer ", "merges ", "pairs, ", "🙂 ", "数字 123456 ", "\n\n", "  "};
  while (large.size() < (1 << 20)) large += words[next() % 8];
  for (const char* folder : {"gpt2", "llama-2", "falcon-7b", "mistral-7b-instruct-v0.3"}) {
    auto tok = load_hf_tokenizer_json(dir + "/" + folder + "/tokenizer.json", dir + "/" + folder);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    for (int round = 0; round < 200; ++round) {
      std::string bytes(next() % 64, '\0');
      for (char& c : bytes) c = static_cast<char>(next() & 0xFF);
      const auto ids = (*tok)->encode(bytes, true);
      (void)(*tok)->decode(ids, round % 2 == 0);
    }
    const auto start = std::chrono::steady_clock::now();
    const auto ids = (*tok)->encode(large, false);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(ids.size(), large.size() / 20);
    EXPECT_LT(seconds, 10.0) << folder;
    std::printf("%s: 1 MiB -> %zu tokens in %.3f s\n", folder, ids.size(), seconds);
  }
}

}  // namespace
}  // namespace zl
