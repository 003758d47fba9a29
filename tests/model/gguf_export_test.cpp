// write_gguf when the disk fills: the error names the file and the cause,
// and neither the file nor its partial copy is left behind. A file-size
// limit (RLIMIT_FSIZE, with SIGXFSZ ignored so writes fail with EFBIG)
// stands in for a full disk: the same short write, without a small mount.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>

#include "model/dummy.h"
#include "model/gguf_export.h"

namespace zl {
namespace {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit limited = old_;
    limited.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &limited) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
  bool ok_ = false;
};

TEST(GgufWriterFaultTest, DiskFullLeavesNothingAndSaysWhy) {
  auto config = dummy_config("tiny");
  ASSERT_TRUE(config.ok());
  auto weights = dummy_weights(*config, 1);
  ASSERT_TRUE(weights.ok());
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "zl_gguf_disk_full";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "tiny.gguf").string();
  Status s;
  {
    FileSizeLimit limit(64 << 10);  // dummy:tiny in f32 is megabytes
    ASSERT_TRUE(limit.ok());
    s = write_gguf(path, *config, *weights, byte_tokenizer_gguf_vocab(config->vocab_size), "tiny");
  }
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("File too large"), std::string::npos) << s.message();
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "a partial file was left in " << dir;
  // Without the limit the same call writes the file, under its own name only.
  ASSERT_TRUE(write_gguf(path, *config, *weights, byte_tokenizer_gguf_vocab(config->vocab_size), "tiny").ok());
  EXPECT_GT(std::filesystem::file_size(path), 64u << 10);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace zl
