// Every chat template in ../shared/tokenizers rendered for every conversation
// of tests/golden/chat_template/conversations.json must equal transformers'
// output byte for byte (goldens: scripts/golden/make_chat_template_goldens.py).
// Where transformers raised, we must fail too (the message should contain
// transformers' message; a mismatch there is reported but not fatal).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bundle/chat_template_source.h"
#include "jinja/chat_template.h"
#include "test_util.h"

namespace zl {
namespace {

using Json = nlohmann::ordered_json;
constexpr int64_t kGoldenTime = 1753488000;  // 2025-07-26 00:00 UTC, as the script pins it

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json read_json(const std::string& path) { return Json::parse(read_file(path), nullptr, false); }

// "first difference at byte N" with some context on both sides.
std::string describe_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i < 40 ? 0 : i - 40;
  std::ostringstream os;
  os << "first difference at byte " << i << " (want " << want.size() << " bytes, got " << got.size() << ")\n"
     << "  want: ..." << Json(want.substr(from, 100)).dump() << "\n"
     << "  got:  ..." << Json(got.substr(from, 100)).dump();
  return os.str();
}

StatusOr<std::string> template_source(const Json& golden) {
  std::string rel = golden["template"].get<std::string>();
  std::string path = test::shared_path("tokenizers/" + rel);
  if (rel.ends_with(".jinja")) return read_file(path);
  Json doc = read_json(path);
  if (!doc.is_object() || !doc.contains("chat_template")) return not_found(path, ": no chat_template");
  return select_chat_template(doc["chat_template"], golden["select"].is_string() ? golden["select"].get<std::string>() : "");
}

TEST(ChatTemplateGoldens, EveryTemplateEveryConversation) {
  if (test::shared_path("tokenizers").empty()) GTEST_SKIP() << "../shared/tokenizers is missing";
  std::string dir = test::golden_path("chat_template");
  Json conversations = read_json(dir + "/conversations.json");
  ASSERT_TRUE(conversations.is_array());
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.ends_with(".json") && name != "conversations.json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 25u);
  int matched = 0, total = 0, error_text_mismatch = 0;
  for (const std::string& file : files) {
    Json golden = read_json(file);
    SCOPED_TRACE(file);
    StatusOr<std::string> source = template_source(golden);
    ASSERT_TRUE(source.ok()) << source.status().to_string();
    StatusOr<ChatTemplate> tmpl = ChatTemplate::parse(*source, golden["template"].get<std::string>());
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    tmpl->set_fixed_time(kGoldenTime);
    for (const Json& result : golden["results"]) {
      const Json& conv = conversations[result["conversation"].get<size_t>()];
      ChatTemplateOptions options;
      options.add_generation_prompt = conv["add_generation_prompt"].get<bool>();
      options.bos_token = golden["bos_token"].get<std::string>();
      options.eos_token = golden["eos_token"].get<std::string>();
      options.tools = conv["tools"];
      options.documents = conv["documents"];
      options.extra = conv["extra"];
      StatusOr<std::string> out = apply_chat_template(*tmpl, conv["messages"], options);
      ++total;
      std::string where = file + " conversation " + conv["name"].get<std::string>();
      if (result.contains("output")) {
        std::string want = result["output"].get<std::string>();
        if (!out.ok()) {
          ADD_FAILURE() << where << ": want output, got error " << out.status().to_string();
        } else if (*out != want) {
          ADD_FAILURE() << where << ": " << describe_difference(want, *out);
        } else {
          ++matched;
        }
      } else if (out.ok()) {
        ADD_FAILURE() << where << ": want error '" << result["error"].get<std::string>() << "', got output "
                      << Json(*out).dump();
      } else {
        ++matched;
        if (out.status().message().find(result["error"].get<std::string>()) == std::string::npos) {
          ++error_text_mismatch;
          std::cout << "note: " << where << ": error text differs: want '" << result["error"].get<std::string>()
                    << "', got '" << out.status().message() << "'\n";
        }
      }
    }
  }
  std::cout << "chat template goldens: " << matched << " of " << total << " match (" << files.size()
            << " templates); error messages differing: " << error_text_mismatch << "\n";
}

}  // namespace
}  // namespace zl
