// Models by Hub id end to end: a tiny safetensors model (the llama-gqa-tied
// golden) and a GGUF (../shared stories260K) served by a fake Hub, opened by
// id, then opened again with the Hub gone and HF_HUB_OFFLINE=1.
#include <gtest/gtest.h>

#include <filesystem>

#include "bundle/model_loader.h"
#include "core/mapped_file.h"
#include "model/fake_hub.h"
#include "model/hf_hub_download.h"
#include "test_util.h"

namespace zl {
namespace {

namespace fs = std::filesystem;
using test::FakeHub;

const std::string kCommit = "fedcba9876543210fedcba9876543210fedcba98";

// HF_HUB_CACHE (fresh) and HF_ENDPOINT for one test; other HF_* unset.
void isolate(test::ScopedEnv& env, const std::string& cache, const std::string& endpoint) {
  for (const char* name : {"HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HUGGINGFACE_HUB_CACHE"})
    env.unset(name);
  env.set("HF_HUB_CACHE", cache);
  env.set("HF_ENDPOINT", endpoint);
}

TEST(HfHubModelTest, DownloadsASafetensorsModelThenOpensItOffline) {
  FakeHub hub;
  hub.set_commit("org/tiny-llama", "main", kCommit);
  const std::string golden = test::golden_path("logits/llama-gqa-tied");
  int etag_number = 0;
  for (const auto& entry : fs::directory_iterator(golden)) {
    std::string name = entry.path().filename().string();
    std::string bytes = *read_file(entry.path().string());
    FakeHub::File file{bytes, std::string(39, 'b') + std::to_string(etag_number++ % 10)};
    if (name.ends_with(".safetensors")) file = {bytes, sha256_hex(bytes), /*lfs=*/true, /*redirect=*/true};
    hub.add_file("org/tiny-llama", name, file);
  }
  test::ScopedEnv env;
  const std::string cache = test::temp_dir() + "/hub-safetensors";
  isolate(env, cache, hub.endpoint());

  StatusOr<ModelSource> source = open_model("org/tiny-llama");
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  const std::string snapshot = hf_repo_cache(cache, "org/tiny-llama").snapshot_dir(kCommit);
  EXPECT_EQ(source->spec, "org/tiny-llama");
  EXPECT_EQ(source->path, snapshot);
  EXPECT_EQ(source->format, ModelFormat::kHuggingFace);
  EXPECT_EQ(source->config.dim, 64);
  EXPECT_EQ(source->config.num_layers, 2);
  StatusOr<ModelWeights> weights = load_model_weights(*source);
  EXPECT_TRUE(weights.ok()) << weights.status().to_string();
  // The model's files, not the golden's extras.
  for (const char* name : {"config.json", "generation_config.json", "model.safetensors"})
    EXPECT_TRUE(fs::is_symlink(snapshot + "/" + name)) << name;
  for (const char* name : {"logits.f32", "golden.json"}) {
    EXPECT_FALSE(fs::exists(snapshot + "/" + name)) << name;
    EXPECT_EQ(hub.count("GET", name), 0) << name;
  }

  hub.stop();
  env.set("HF_HUB_OFFLINE", "1");
  StatusOr<ModelSource> offline = open_model("org/tiny-llama");
  ASSERT_TRUE(offline.ok()) << offline.status().to_string();
  EXPECT_EQ(offline->path, snapshot);
  StatusOr<ModelSource> by_commit = open_model("org/tiny-llama@" + kCommit);
  ASSERT_TRUE(by_commit.ok()) << by_commit.status().to_string();
  StatusOr<ModelSource> other_branch = open_model("org/tiny-llama@dev");
  EXPECT_FALSE(other_branch.ok());
}

TEST(HfHubModelTest, CliGeneratesFromAGgufNamedByIdAndQuant) {
  const std::string gguf = test::shared_path("models/stories260K.gguf");
  if (gguf.empty()) GTEST_SKIP() << "../shared is missing";
  FakeHub hub;
  const std::string bytes = *read_file(gguf);
  hub.set_commit("org/stories-GGUF", "main", kCommit);
  hub.add_file("org/stories-GGUF", "stories260K-F32.gguf", {bytes, sha256_hex(bytes), true, true});
  hub.add_file("org/stories-GGUF", "stories260K-Q8_0.gguf", {"not served", sha256_hex("not served"), true, true});
  test::ScopedEnv env;
  isolate(env, test::temp_dir() + "/hub-gguf", hub.endpoint());

  std::vector<std::string> args = {"generate", "--model", "org/stories-GGUF:f32", "--prompt", "Once upon a time",
                                   "--max-new-tokens", "60", "--temperature", "0"};
  test::CommandResult r = test::run_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u) << r.out;
  EXPECT_EQ(hub.count("GET", "Q8_0"), 0);

  hub.stop();
  env.set("HF_HUB_OFFLINE", "1");
  test::CommandResult check = test::run_cli({"check", "--model", "org/stories-GGUF:F32"});
  EXPECT_EQ(check.exit_code, 0) << check.err;
  EXPECT_NE(check.out.find("org/stories-GGUF:F32 (GGUF)"), std::string::npos) << check.out;
  test::CommandResult missing = test::run_cli({"check", "--model", "org/stories-GGUF:Q4_0"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("stories260K-F32.gguf"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace zl
