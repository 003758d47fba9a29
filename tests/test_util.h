// Helpers shared by the tests: where data lives, temporary files, and running
// the CLI as a subprocess.
#pragma once

#include <string>
#include <vector>

namespace zl::test {

// <repo>/tests/golden/<rel>
std::string golden_path(const std::string& rel);
// $ZEROLAYER_SHARED_DIR/<rel> (default ../shared/<rel>), or "" when that folder is
// missing (tests then skip).
std::string shared_path(const std::string& rel);
// A released model fetched by scripts/fetch_models.sh into
// $ZEROLAYER_MODEL_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/zerolayer);
// "" when it is not there (tests then skip, naming the path).
std::string model_cache_path(const std::string& file);
// Where model_cache_path looks, for skip messages.
std::string model_cache_dir();
// The fake libnvidia-ml of tests/core/fake_nvml.c (its values are listed there).
std::string fake_nvml_path();
// A fresh directory under $TMPDIR, removed at process exit.
std::string temp_dir();
// Writes bytes to a file in temp_dir(); returns its path.
std::string write_temp_file(const std::string& name, const std::string& bytes);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs the zerolayer binary with args (no shell), feeding `input` on stdin.
CommandResult run_cli(const std::vector<std::string>& args, const std::string& input = "");

// The CLI left running in the background (e.g. `serve`), stdout and stderr
// into one log; stopped with SIGTERM and reaped at destruction at the latest.
class CliProcess {
 public:
  explicit CliProcess(const std::vector<std::string>& args);
  ~CliProcess();
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;
  std::string output() const;  // the log so far
  int stop();                  // SIGTERM, wait; the exit code (128 + signal if killed)

 private:
  std::string output_path_;
  int pid_ = -1;
  int exit_code_ = -1;
};

}  // namespace zl::test
