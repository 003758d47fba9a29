#include "test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace zl::test {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TempRoot {
  std::string path;
  TempRoot() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/zltest.XXXXXX";
    char* made = mkdtemp(tmpl.data());
    path = made ? made : "/tmp";
  }
  ~TempRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

std::string golden_path(const std::string& rel) {
  return std::string(ZL_SOURCE_DIR) + "/tests/golden/" + rel;
}

std::string shared_path(const std::string& rel) {
  // ZEROLAYER_SHARED_DIR: where the data lies when the binary runs elsewhere (the GPU machine).
  const char* env = std::getenv("ZEROLAYER_SHARED_DIR");
  std::string root = env != nullptr && *env != '\0' ? env : ZL_SHARED_DIR;
  if (!std::filesystem::is_directory(root)) return "";
  return root + "/" + rel;
}

std::string model_cache_dir() {
  const char* env = std::getenv("ZEROLAYER_MODEL_CACHE");
  if (env != nullptr && *env != '\0') return env;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/zerolayer";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.cache/zerolayer";
}

std::string model_cache_path(const std::string& file) {
  std::string path = model_cache_dir() + "/" + file;
  return std::filesystem::is_regular_file(path) ? path : "";
}

std::string fake_nvml_path() { return ZL_FAKE_NVML_PATH; }

std::string temp_dir() {
  static TempRoot root;
  return root.path;
}

std::string write_temp_file(const std::string& name, const std::string& bytes) {
  std::string path = temp_dir() + "/" + name;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

namespace {

// Forks and execs the CLI with stdin, stdout and stderr on the given files.
pid_t spawn_cli(const std::vector<std::string>& args, const std::string& in_path, const std::string& out_path,
                const std::string& err_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int in_fd = open(in_path.c_str(), O_RDONLY);
    int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err_fd = err_path == out_path ? out_fd : open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    std::vector<char*> argv;
    std::string exe = ZL_CLI_PATH;
    argv.push_back(exe.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

std::string next_base() {
  static int counter = 0;
  return temp_dir() + "/cli" + std::to_string(counter++);
}

}  // namespace

CommandResult run_cli(const std::vector<std::string>& args, const std::string& input) {
  std::string base = next_base();
  std::string in_path = base + ".in", out_path = base + ".out", err_path = base + ".err";
  {
    std::ofstream in(in_path, std::ios::binary);
    in << input;
  }
  pid_t pid = spawn_cli(args, in_path, out_path, err_path);
  int status = 0;
  waitpid(pid, &status, 0);
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_all(out_path);
  r.err = read_all(err_path);
  return r;
}

CliProcess::CliProcess(const std::vector<std::string>& args) {
  output_path_ = next_base() + ".log";
  pid_ = spawn_cli(args, "/dev/null", output_path_, output_path_);
}

CliProcess::~CliProcess() { stop(); }

std::string CliProcess::output() const { return read_all(output_path_); }

int CliProcess::stop() {
  if (pid_ <= 0) return exit_code_;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_code_;
}

}  // namespace zl::test
