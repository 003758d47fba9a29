// Hub ids: parsing, the environment, resolving from a hand-made cache in
// huggingface_hub's layout, and downloading from a fake Hub on 127.0.0.1
// (redirects, resume after a cut, corrupt and malicious answers).
#include "model/hf_hub.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bundle/model_loader.h"
#include "core/mapped_file.h"
#include "model/fake_hub.h"
#include "model/hf_hub_download.h"
#include "test_util.h"

namespace zl {
namespace {

namespace fs = std::filesystem;
using test::FakeHub;

const std::string kCommit1(40, 'a');
const std::string kCommit2 = "0123456789abcdef0123456789abcdef01234567";

// A fresh cache folder per test, and no HF_* variables from the outside.
class HfHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    cache_ = test::temp_dir() + "/hub" + std::to_string(counter++);
    fs::create_directories(cache_);
    for (const char* name : {"HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "HF_ENDPOINT",
                             "HUGGINGFACE_HUB_CACHE"})
      env_.unset(name);
    env_.set("HF_HUB_CACHE", cache_);
    options_.cache_dir = cache_;
    options_.endpoint = "http://127.0.0.1:1";  // nothing listens: a test that touches it fails
  }

  // blobs/<sha256> holding `bytes`, linked from snapshots/<commit>/<path>.
  void cache_file(const std::string& repo, const std::string& commit, const std::string& path,
                  const std::string& bytes) {
    HfRepoCache cache = hf_repo_cache(cache_, repo);
    std::string etag = sha256_hex(bytes);
    fs::create_directories(cache.root + "/blobs");
    std::ofstream(cache.blob_path(etag), std::ios::binary) << bytes;
    std::string link = cache.snapshot_dir(commit) + "/" + path;
    fs::create_directories(fs::path(link).parent_path());
    fs::create_symlink("../../blobs/" + etag, link);
  }
  void cache_ref(const std::string& repo, const std::string& branch, const std::string& commit) {
    std::string ref = hf_repo_cache(cache_, repo).ref_path(branch);
    fs::create_directories(fs::path(ref).parent_path());
    std::ofstream(ref) << commit;
  }
  StatusOr<std::string> resolve(const std::string& spec) {
    std::optional<HfModelId> id = parse_hf_model_id(spec);
    EXPECT_TRUE(id.has_value()) << spec;
    if (!id) return invalid_argument("not an id");
    return resolve_hf_model(*id, options_);
  }

  std::string cache_;
  HfHubOptions options_;
  test::ScopedEnv env_;
};

std::string slurp(const std::string& path) {
  StatusOr<std::string> bytes = read_file(path);
  return bytes.ok() ? *bytes : "<unreadable " + path + ">";
}

// Bytes that differ at every offset, so a wrong resume offset shows.
std::string pattern(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + i / 251) & 0xff);
  return bytes;
}

TEST(HfHubIdTest, ParsesIds) {
  auto id = parse_hf_model_id("google/gemma-3-270m");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "google/gemma-3-270m");
  EXPECT_EQ(id->revision, "main");
  EXPECT_EQ(id->quant, "");
  id = parse_hf_model_id("unsloth/gemma-3-270m-it-GGUF@v1.0:Q4_K_M");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->repo, "unsloth/gemma-3-270m-it-GGUF");
  EXPECT_EQ(id->revision, "v1.0");
  EXPECT_EQ(id->quant, "Q4_K_M");
  id = parse_hf_model_id("org/name@refs/pr/1");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->revision, "refs/pr/1");
  EXPECT_EQ(id->to_string(), "org/name@refs/pr/1");
}

TEST(HfHubIdTest, RejectsWhatIsNotAnId) {
  for (const char* spec : {"name", "/models/llama", "./org/name", "org/../etc", "org/name@../x", "org/name@/abs",
                           "org/na me", "org/name:", "org/name@", "org/name:Q4:K", "-org/name", "org/name/extra",
                           "dummy:tiny", "org/name@a//b", "org\\name/x"})
    EXPECT_FALSE(parse_hf_model_id(spec)) << spec;
}

TEST_F(HfHubTest, ReadsTheEnvironmentAsHuggingfaceHubDoes) {
  env_.set("HF_ENDPOINT", "http://mirror.example/");
  env_.set("HUGGING_FACE_HUB_TOKEN", "old-name");
  env_.set("HF_HUB_OFFLINE", "1");
  StatusOr<HfHubOptions> o = hf_hub_options_from_env();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->cache_dir, cache_);
  EXPECT_EQ(o->endpoint, "http://mirror.example");
  EXPECT_EQ(o->token, "old-name");
  EXPECT_TRUE(o->offline);
  env_.set("HF_TOKEN", "new-name");
  env_.set("HF_HUB_OFFLINE", "0");
  env_.unset("HF_HUB_CACHE");
  env_.set("HF_HOME", "/somewhere/hf");
  o = hf_hub_options_from_env();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->cache_dir, "/somewhere/hf/hub");
  EXPECT_EQ(o->token, "new-name");
  EXPECT_FALSE(o->offline);
  env_.unset("HF_HOME");
  env_.unset("XDG_CACHE_HOME");
  env_.unset("HF_ENDPOINT");
  env_.set("HOME", "/home/someone");
  o = hf_hub_options_from_env();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->cache_dir, "/home/someone/.cache/huggingface/hub");
  EXPECT_EQ(o->endpoint, "https://huggingface.co");
}

TEST_F(HfHubTest, ResolvesBranchesAndCommitsFromTheCache) {
  cache_file("org/tiny", kCommit1, "config.json", "{\"v\": 1}");
  cache_file("org/tiny", kCommit1, "model.safetensors", "weights 1");
  cache_file("org/tiny", kCommit2, "config.json", "{\"v\": 2}");
  cache_file("org/tiny", kCommit2, "model.safetensors", "weights 2");
  cache_ref("org/tiny", "main", kCommit1);
  cache_ref("org/tiny", "dev", kCommit2);
  const std::string root = cache_ + "/models--org--tiny/snapshots/";
  auto main = resolve("org/tiny");
  ASSERT_TRUE(main.ok()) << main.status().to_string();
  EXPECT_EQ(*main, root + kCommit1);
  EXPECT_EQ(slurp(*main + "/config.json"), "{\"v\": 1}");
  auto dev = resolve("org/tiny@dev");
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  EXPECT_EQ(*dev, root + kCommit2);
  auto by_commit = resolve("org/tiny@" + kCommit2);
  ASSERT_TRUE(by_commit.ok()) << by_commit.status().to_string();
  EXPECT_EQ(*by_commit, root + kCommit2);
  // A revision the cache does not know, with the network unreachable.
  auto unknown = resolve("org/tiny@v9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kUnavailable) << unknown.status().to_string();
  EXPECT_NE(unknown.status().message().find("v9"), std::string::npos) << unknown.status().message();
}

TEST_F(HfHubTest, AnIncompleteSnapshotIsNotUsed) {
  cache_file("org/half", kCommit1, "config.json", "{}");
  cache_ref("org/half", "main", kCommit1);
  options_.offline = true;
  auto r = resolve("org/half");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("lacks model.safetensors"), std::string::npos) << r.status().message();
}

TEST_F(HfHubTest, PicksTheGgufTheQuantNames) {
  for (const char* name : {"gemma-3-270m-Q4_K_M.gguf", "gemma-3-270m-Q4_K_S.gguf", "gemma-3-270m-Q8_0.gguf",
                           "mmproj-gemma-3-Q4_K_M.gguf", "README.md"})
    cache_file("org/gemma-GGUF", kCommit1, name, name);
  cache_ref("org/gemma-GGUF", "main", kCommit1);
  options_.offline = true;
  const std::string snapshot = cache_ + "/models--org--gemma-GGUF/snapshots/" + kCommit1 + "/";
  auto q8 = resolve("org/gemma-GGUF:q8_0");
  ASSERT_TRUE(q8.ok()) << q8.status().to_string();
  EXPECT_EQ(*q8, snapshot + "gemma-3-270m-Q8_0.gguf");
  auto q4 = resolve("org/gemma-GGUF:Q4_K_M");  // the mmproj file does not count
  ASSERT_TRUE(q4.ok()) << q4.status().to_string();
  EXPECT_EQ(*q4, snapshot + "gemma-3-270m-Q4_K_M.gguf");
  auto plain = resolve("org/gemma-GGUF");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(*plain, snapshot + "gemma-3-270m-Q4_K_M.gguf");

  auto ambiguous = resolve("org/gemma-GGUF:Q4_K");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_EQ(ambiguous.status().code(), StatusCode::kInvalidArgument);
  for (const char* name : {"several", "gemma-3-270m-Q4_K_M.gguf", "gemma-3-270m-Q4_K_S.gguf"})
    EXPECT_NE(ambiguous.status().message().find(name), std::string::npos) << ambiguous.status().message();
  auto none = resolve("org/gemma-GGUF:Q5_K_M");
  ASSERT_FALSE(none.ok());
  for (const char* name : {"Q5_K_M", "gemma-3-270m-Q8_0.gguf", "gemma-3-270m-Q4_K_S.gguf"})
    EXPECT_NE(none.status().message().find(name), std::string::npos) << none.status().message();
}

TEST(HfHubPickTest, WithoutAQuantTakesQ4KMElseTheFirst) {
  HfModelId id;
  id.repo = "org/x";
  auto first = pick_gguf_file({"a/x-Q8_0.gguf", "x-F16.gguf", "x-q2_k.gguf"}, id);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, "a/x-Q8_0.gguf");
  auto q4km = pick_gguf_file({"x-F16.gguf", "x-q4_k_m.gguf", "x-Q8_0.gguf"}, id);
  ASSERT_TRUE(q4km.ok());
  EXPECT_EQ(*q4km, "x-q4_k_m.gguf");
  auto nothing = pick_gguf_file({"README.md", "mmproj-F16.gguf"}, id);
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.status().message().find("neither config.json nor"), std::string::npos);
}

TEST_F(HfHubTest, OfflineWithNothingCachedSaysWhereItLooked) {
  env_.set("HF_HUB_OFFLINE", "1");
  StatusOr<ModelSource> source = open_model("org/absent@v2");
  ASSERT_FALSE(source.ok());
  const std::string m = source.status().message();
  for (const std::string& part : {std::string("--model org/absent@v2"), std::string("org/absent at revision v2"),
                                  cache_, std::string("HF_HUB_OFFLINE")})
    EXPECT_NE(m.find(part), std::string::npos) << "'" << part << "' not in: " << m;
  EXPECT_FALSE(fs::exists(cache_ + "/models--org--absent"));
}

TEST_F(HfHubTest, UnreachableHubWithNothingCachedSaysSo) {
  FakeHub hub;
  options_.endpoint = hub.endpoint();
  hub.stop();  // the port is closed now
  auto r = resolve("org/absent");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  for (const std::string& part : {std::string("org/absent at revision main"), cache_, options_.endpoint})
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().message();
}

TEST_F(HfHubTest, UnknownRepoIsNotFound) {
  FakeHub hub;
  options_.endpoint = hub.endpoint();
  auto r = resolve("org/missing");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("HTTP 404"), std::string::npos) << r.status().message();
}

TEST_F(HfHubTest, DownloadsOneGgufThroughARedirectWithoutLeakingTheToken) {
  FakeHub hub;
  const std::string q4 = pattern(3000), q8 = pattern(5000);
  hub.set_commit("org/m-GGUF", "main", kCommit2);
  hub.add_file("org/m-GGUF", "m-Q4_K_M.gguf", {q4, sha256_hex(q4), /*lfs=*/true, /*redirect=*/true});
  hub.add_file("org/m-GGUF", "m-Q8_0.gguf", {q8, sha256_hex(q8), true, true});
  hub.add_file("org/m-GGUF", "README.md", {"# m", std::string(40, 'e')});
  options_.endpoint = hub.endpoint();
  options_.token = "secret";
  auto r = resolve("org/m-GGUF:Q4_K_M");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  HfRepoCache cache = hf_repo_cache(cache_, "org/m-GGUF");
  EXPECT_EQ(*r, cache.snapshot_dir(kCommit2) + "/m-Q4_K_M.gguf");
  EXPECT_EQ(slurp(*r), q4);
  EXPECT_EQ(fs::read_symlink(*r).string(), "../../blobs/" + sha256_hex(q4));
  EXPECT_EQ(slurp(cache.ref_path("main")), kCommit2);
  EXPECT_EQ(hub.count("GET", "m-Q8_0.gguf"), 0);
  EXPECT_EQ(hub.count("GET", "/cdn/org/m-GGUF/resolve/" + kCommit2 + "/m-Q4_K_M.gguf"), 1);
  for (const FakeHub::Request& req : hub.requests()) {
    bool cdn = req.target.starts_with("/cdn/");
    EXPECT_EQ(req.authorization, cdn ? "" : "Bearer secret") << req.method << " " << req.target;
  }
  // Cached now: no request at all the second time.
  size_t num_requests = hub.requests().size();
  auto again = resolve("org/m-GGUF:Q4_K_M");
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(hub.requests().size(), num_requests);
}

TEST_F(HfHubTest, RefusesACorruptDownloadAndKeepsNothing) {
  FakeHub hub;
  const std::string good = pattern(4000);
  std::string bad = good;
  bad[1234] ^= 1;
  hub.set_commit("org/bad", "main", kCommit1);
  hub.add_file("org/bad", "m-Q8_0.gguf", {bad, sha256_hex(good), true, false});
  options_.endpoint = hub.endpoint();
  auto r = resolve("org/bad:Q8_0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("sha256"), std::string::npos) << r.status().message();
  HfRepoCache cache = hf_repo_cache(cache_, "org/bad");
  EXPECT_FALSE(fs::exists(fs::symlink_status(cache.snapshot_dir(kCommit1) + "/m-Q8_0.gguf")));
  EXPECT_FALSE(fs::exists(cache.blob_path(sha256_hex(good))));
  EXPECT_FALSE(fs::exists(cache.blob_path(sha256_hex(good)) + ".incomplete"));
  EXPECT_FALSE(fs::exists(cache.ref_path("main")));
}

TEST_F(HfHubTest, ResumesADownloadCutShort) {
  FakeHub hub;
  const std::string bytes = pattern(200000);
  hub.set_commit("org/cut", "main", kCommit1);
  FakeHub::File file{bytes, sha256_hex(bytes), true, true};
  file.cut_after = 70000;
  hub.add_file("org/cut", "m-Q8_0.gguf", file);
  options_.endpoint = hub.endpoint();
  auto r = resolve("org/cut:Q8_0");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(slurp(*r), bytes);
  std::vector<std::string> ranges;
  for (const FakeHub::Request& req : hub.requests())
    if (req.method == "GET" && req.target.starts_with("/cdn/")) ranges.push_back(req.range);
  EXPECT_EQ(ranges, (std::vector<std::string>{"", "bytes=70000-"}));
  EXPECT_FALSE(fs::exists(hf_repo_cache(cache_, "org/cut").blob_path(sha256_hex(bytes)) + ".incomplete"));
}

TEST_F(HfHubTest, ResumesWhatAnEarlierRunLeft) {
  FakeHub hub;
  const std::string bytes = pattern(50000);
  hub.set_commit("org/left", "main", kCommit1);
  hub.add_file("org/left", "m-Q8_0.gguf", {bytes, sha256_hex(bytes), true, false});
  options_.endpoint = hub.endpoint();
  HfRepoCache cache = hf_repo_cache(cache_, "org/left");
  fs::create_directories(cache.root + "/blobs");
  std::ofstream(cache.blob_path(sha256_hex(bytes)) + ".incomplete", std::ios::binary) << bytes.substr(0, 12345);
  auto r = resolve("org/left:Q8_0");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(slurp(*r), bytes);
  EXPECT_EQ(hub.count("GET", "m-Q8_0.gguf"), 1);
  EXPECT_EQ(hub.requests().back().range, "bytes=12345-");
}

TEST_F(HfHubTest, RefusesUnsafeNamesFromTheHub) {
  FakeHub hub;
  options_.endpoint = hub.endpoint();
  hub.set_commit("org/evil", "main", kCommit1);
  hub.add_file("org/evil", "m-Q8_0.gguf", {"x", sha256_hex("x"), true, false});
  hub.add_listed_name("org/evil", "../x");
  auto listed = resolve("org/evil:Q8_0");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.status().message().find("unsafe file name '../x'"), std::string::npos) << listed.status().message();
  EXPECT_FALSE(fs::exists(cache_ + "/models--org--evil/snapshots"));

  // An ETag names a blob file: one with a path in it is refused.
  hub.set_commit("org/etag", "main", kCommit1);
  hub.add_file("org/etag", "m-Q8_0.gguf", {"x", "../../../escaped", false, false});
  auto etag = resolve("org/etag:Q8_0");
  ASSERT_FALSE(etag.ok());
  EXPECT_NE(etag.status().message().find("ETag"), std::string::npos) << etag.status().message();
  EXPECT_FALSE(fs::exists(cache_ + "/escaped"));
  EXPECT_FALSE(fs::exists(cache_ + "/models--org--etag/escaped"));

  // So does a shard name in the index.
  const std::string index = R"({"weight_map": {"w": "../evil.safetensors"}})";
  hub.set_commit("org/index", "main", kCommit1);
  hub.add_file("org/index", "config.json", {"{}", std::string(40, 'c')});
  hub.add_file("org/index", "model.safetensors.index.json", {index, std::string(40, 'd')});
  auto shards = resolve("org/index");
  ASSERT_FALSE(shards.ok());
  EXPECT_NE(shards.status().message().find("unsafe"), std::string::npos) << shards.status().message();
  EXPECT_EQ(hub.count("HEAD", "evil"), 0);
}

TEST_F(HfHubTest, BranchWithASlashIsEncodedAndStoredUnderRefs) {
  FakeHub hub;
  options_.endpoint = hub.endpoint();
  hub.set_commit("org/pr", "refs/pr/1", kCommit2);
  hub.add_file("org/pr", "m-Q8_0.gguf", {"pr", sha256_hex("pr"), true, false});
  auto r = resolve("org/pr@refs/pr/1:Q8_0");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(hub.count("GET", "/api/models/org/pr/revision/refs%2Fpr%2F1"), 1);
  EXPECT_EQ(slurp(hf_repo_cache(cache_, "org/pr").ref_path("refs/pr/1")), kCommit2);
}

}  // namespace
}  // namespace zl
