// Readers for the tokenizer goldens: tests/golden/tokenizer/*.jsonl (see its
// README) and llama.cpp's ggml-vocab-*.gguf.{inp,out} pairs.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace zl::test {

// A gtest parameter name for a ../shared/tokenizers folder: "phi-2" -> "phi_2".
inline std::string folder_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct GoldenRow {
  std::string text;
  std::vector<int32_t> with_special;     // "a"
  std::vector<int32_t> without_special;  // "n"
  std::string decoded_a;                 // "d1"
  std::string decoded_n;                 // "d0"
};

// corpus.json + one <folder>.<kind>.jsonl; empty when either is missing.
inline std::vector<GoldenRow> read_golden_rows(const std::string& corpus_path,
                                               const std::string& jsonl_path) {
  std::vector<GoldenRow> rows;
  nlohmann::json corpus = nlohmann::json::parse(read_text_file(corpus_path), nullptr, false);
  std::string jsonl = read_text_file(jsonl_path);
  if (corpus.is_discarded() || !corpus.is_array() || jsonl.empty()) return rows;
  std::istringstream lines(jsonl);
  std::string line;
  std::getline(lines, line);  // header
  for (const auto& text : corpus) {
    if (!std::getline(lines, line)) break;
    nlohmann::json j = nlohmann::json::parse(line);
    rows.push_back({text.get<std::string>(), j["a"].get<std::vector<int32_t>>(),
                    j["n"].get<std::vector<int32_t>>(), j["d1"].get<std::string>(),
                    j["d0"].get<std::string>()});
  }
  return rows;
}

struct VocabTestCase {
  std::string text;
  std::vector<int32_t> ids;
};

// llama.cpp's .inp (strings separated by "\n__ggml_vocab_test__\n") and .out
// (one line of ids per string).
inline std::vector<VocabTestCase> read_vocab_tests(const std::string& inp_path,
                                                   const std::string& out_path) {
  std::vector<VocabTestCase> cases;
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::string inp = read_text_file(inp_path);
  std::istringstream out(read_text_file(out_path));
  size_t pos = 0;
  while (pos < inp.size()) {
    size_t end = inp.find(sep, pos);
    if (end == std::string::npos) end = inp.size();
    VocabTestCase c;
    c.text = inp.substr(pos, end - pos);
    std::string line;
    if (!std::getline(out, line)) break;
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
    pos = end + sep.size();
  }
  return cases;
}

}  // namespace zl::test
