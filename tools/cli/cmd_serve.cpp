// zerolayer serve: loads a model and serves it over HTTP (OpenAI-compatible,
// src/server/) and shared memory (src/transport/), until SIGINT or SIGTERM.
//
// The HTTP port is bound before the model loads, so /health can say
// "loading" (503) meanwhile. On a signal: stop accepting, abort what is in
// flight (every request still gets its terminal event; streams get a final
// chunk and [DONE]), remove the shared-memory segment, exit 0.
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "bundle/chat_prompt.h"
#include "commands.h"
#include "common.h"
#include "server/http_server.h"
#include "transport/shm_server.h"
#include "zerolayer/engine.h"

namespace zl::cli {
namespace {

// The model when --model is not given: a built-in synthetic Llama (seeded
// random weights, no files), big enough that its output and speed look like
// a real small model's, small enough to load in seconds.
constexpr const char* kDefaultModel = "dummy:llama-110m";

struct ServeFlags {
  ModelFlags model;
  server::HttpServerConfig http;
  std::string shm_name = "/zerolayer";
  std::string shm_size = "64M";
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  int max_num_waiting = 4096;
  std::string cache_policy = "contiguous";
  std::string overlap_scheduling = "on";
  std::string kv_cache_memory = "0.25";
  bool swa_full = false;
  bool kv_populate = false;
  int block_size = 16;
  double shutdown_timeout_s = 5.0;
};

// "0.3" (a fraction of free memory, at most 1) or bytes with an optional
// K/M/G/T suffix (powers of 1024): "512M", "2G", "1073741824".
Status parse_memory(const std::string& text, const char* flag, int64_t& bytes, double& fraction) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || errno != 0 || !std::isfinite(value) || value <= 0)
    return invalid_argument(flag, " must be a fraction in (0, 1] or bytes like 512M or 2G, got '", text, "'");
  std::string suffix(end);
  if (suffix.empty() && value <= 1.0) {
    fraction = value;
    bytes = 0;
    return ok_status();
  }
  double scale = 1;
  if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1024.0;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "t" || suffix == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty() && suffix != "B") return invalid_argument(flag, ": unknown size suffix '", suffix, "'");
  if (value * scale > 9e18) return invalid_argument(flag, " is too large: '", text, "'");
  bytes = static_cast<int64_t>(value * scale);
  return ok_status();
}

StatusOr<EngineConfig> engine_config(const ServeFlags& f) {
  ZL_ASSIGN_OR_RETURN(EngineConfig config, engine_config_from_flags(f.model));
  config.max_num_seqs = f.max_num_seqs;
  config.max_num_batched_tokens = f.max_num_batched_tokens;
  config.max_num_waiting = f.max_num_waiting;
  config.block_size = f.block_size;
  ZL_ASSIGN_OR_RETURN(config.cache_policy, parse_cache_policy(f.cache_policy));
  config.overlap_scheduling = f.overlap_scheduling == "on";
  config.full_window_kv = f.swa_full;
  config.kv_populate = f.kv_populate;
  ZL_RETURN_IF_ERROR(parse_memory(f.kv_cache_memory, "--kv-cache-memory", config.kv_cache_bytes, config.kv_cache_fraction));
  return config;
}

StatusOr<std::unique_ptr<ShmServer>> start_shm(Engine& engine, const ServeFlags& f) {
  ShmServerConfig config;
  config.name = f.shm_name;
  int64_t bytes = 0;
  double fraction = 0;
  ZL_RETURN_IF_ERROR(parse_memory(f.shm_size, "--shm-size", bytes, fraction));
  if (bytes == 0) return invalid_argument("--shm-size must be a size like 64M, got '", f.shm_size, "'");
  config.size_bytes = static_cast<uint64_t>(bytes);
  config.chat_template = f.http.chat_template;
  config.tokenizer_path = f.model.tokenizer;
  return ShmServer::start(engine, config);
}

// Waits for SIGINT/SIGTERM (blocked in every thread, taken here) or until
// `done` is set; returns the signal, or 0.
int wait_signal(const sigset_t& signals, const std::atomic<bool>* done) {
  timespec tick{0, 100 * 1000 * 1000};
  while (!done || !done->load()) {
    int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig > 0) return sig;
  }
  return 0;
}

int run_serve(ServeFlags& f) {
  if (f.model.model.empty()) f.model.model = kDefaultModel;
  StatusOr<EngineConfig> config = engine_config(f);
  if (!config.ok()) return report_error(config.status());
  f.http.tokenizer_path = f.model.tokenizer;
  f.http.device = config->device;
  std::error_code ec;
  if (!f.http.chat_template.empty() && f.http.chat_template != "chatml") {
    if (!std::filesystem::is_regular_file(f.http.chat_template, ec))
      return report_error(invalid_argument("--chat-template: '", f.http.chat_template, "' is not a file (or 'chatml')"));
    // One that does not parse stops start-up before the model loads (it used
    // to leave every chat request a 400).
    StatusOr<LoadedChatTemplate> parsed = load_chat_template("", "", "", f.http.chat_template, nullptr);
    if (!parsed.ok()) return report_error(parsed.status().with_prefix("--chat-template"));
  }

  // Blocked before any thread starts, so every thread inherits the mask and
  // only wait_signal() sees the signals.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto http = server::HttpServer::start(f.http);
  if (!http.ok()) return report_error(http.status());
  std::printf("zerolayer: listening on http://%s:%d (loading %s)\n", f.http.host.c_str(), (*http)->port(),
              config->model.c_str());
  std::fflush(stdout);

  // The model loads on its own thread so a signal during a long load still ends the process.
  std::atomic<bool> loaded{false};
  StatusOr<std::unique_ptr<Engine>> engine = internal_error("not loaded");
  std::thread loader([&] {
    engine = Engine::create(*config);
    loaded.store(true);
  });
  if (int sig = wait_signal(signals, &loaded); sig != 0) {
    std::fprintf(stderr, "zerolayer: signal %d while loading; exiting\n", sig);
    (*http)->shutdown(0.0);
    std::fflush(stdout);
    std::_Exit(0);  // the loader cannot be interrupted; nothing else holds resources yet
  }
  loader.join();
  if (!engine.ok()) {
    (*http)->shutdown(0.0);
    return report_error(engine.status());
  }
  // Shared memory first: once /health answers 200, every transport is ready.
  std::unique_ptr<ShmServer> shm;
  if (!f.shm_name.empty()) {
    auto started = start_shm(**engine, f);
    if (!started.ok()) {
      (*http)->shutdown(0.0);
      return report_error(started.status().with_prefix("shared memory " + f.shm_name));
    }
    shm = std::move(*started);
    std::printf("zerolayer: shared memory at %s\n", f.shm_name.c_str());
  }
  (*http)->attach_engine(**engine);

  std::printf("zerolayer: serving %s on http://%s:%d (POST /v1/completions, GET /health); Ctrl-C stops\n",
              f.http.served_model_name.empty() ? config->model.c_str() : f.http.served_model_name.c_str(),
              f.http.host.c_str(), (*http)->port());
  std::fflush(stdout);

  int sig = wait_signal(signals, nullptr);
  std::fprintf(stderr, "zerolayer: signal %d, shutting down\n", sig);
  (*http)->shutdown(f.shutdown_timeout_s);
  shm.reset();  // removes the segment
  engine->reset();
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over HTTP (OpenAI API) and shared memory");
  add_model_flags(*cmd, f->model, /*model_required=*/false);
  CLI::Option* model = cmd->get_option("--model");
  model->description("Model to serve: " + model->get_description() + ". Default: " + kDefaultModel +
                     ", a built-in synthetic model");
  server::HttpServerConfig& h = f->http;
  auto env = [](const char* name) { return std::string("ZEROLAYER_") + name; };
  cmd->add_option("--host", h.host, "Address to listen on")->envname(env("HOST"))->capture_default_str();
  cmd->add_option("--port", h.port, "TCP port (0: any free port)")->envname(env("PORT"))->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--api-key", h.api_key, "Require 'Authorization: Bearer KEY' on every route but /health")->envname(env("API_KEY"));
  cmd->add_option("--served-model-name", h.served_model_name, "Model name in the API (default: the --model value)")->envname(env("SERVED_MODEL_NAME"));
  cmd->add_option("--http-threads", h.num_io_threads, "HTTP I/O threads")->envname(env("HTTP_THREADS"))->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--chat-template", h.chat_template, "Chat template for /v1/chat/completions: a Jinja file, or 'chatml' (default: the model's own)")->envname(env("CHAT_TEMPLATE"));
  cmd->add_option("--tool-call-parser", h.tool_call_parser,
                  "How tool calls are read from chat outputs: auto (the chat template's syntax), none, hermes "
                  "(<tool_call> JSON, Qwen and Hermes), llama3_json (Llama 3.x), mistral ([TOOL_CALLS])")
      ->envname(env("TOOL_CALL_PARSER"))
      ->check(CLI::IsMember({"auto", "none", "hermes", "llama3_json", "mistral"}))
      ->capture_default_str();
  cmd->add_option("--shm-name", f->shm_name, "Shared-memory segment name ('' disables shared memory)")->envname(env("SHM_NAME"))->capture_default_str();
  cmd->add_option("--shm-size", f->shm_size, "Shared-memory segment size (e.g. 64M)")->envname(env("SHM_SIZE"))->capture_default_str();
  cmd->add_option("--max-num-seqs", f->max_num_seqs, "Sequences in one batch at most")->envname(env("MAX_NUM_SEQS"))->check(CLI::Range(1, 65536))->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", f->max_num_batched_tokens, "Tokens in one forward pass at most")->envname(env("MAX_NUM_BATCHED_TOKENS"))->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("--max-num-waiting", f->max_num_waiting, "Waiting-queue bound; beyond it requests get 503")->envname(env("MAX_NUM_WAITING"))->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("--cache-policy", f->cache_policy, "KV memory policy: contiguous, paged or hybrid")->envname(env("CACHE_POLICY"))->check(CLI::IsMember({"contiguous", "paged", "hybrid"}))->capture_default_str();
  cmd->add_option("--overlap-scheduling", f->overlap_scheduling, "Plan and publish beside the running forward pass (CPU): on or off")->envname(env("OVERLAP_SCHEDULING"))->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  cmd->add_option("--kv-cache-memory", f->kv_cache_memory, "KV pool: bytes (512M, 2G) or a fraction of free memory (0.3)")->envname(env("KV_CACHE_MEMORY"))->capture_default_str();
  cmd->add_flag("--kv-populate", f->kv_populate, "Commit the KV pool's memory at start (CPU), so that no request waits for the kernel to back its first blocks; costs start-up time")->envname(env("KV_POPULATE"));
  cmd->add_flag("--swa-full", f->swa_full, "Sliding-window layers keep KV for every position, not only their window (more memory; as llama.cpp's --swa-full)")->envname(env("SWA_FULL"));
  cmd->add_option("--block-size", f->block_size, "Tokens per KV block")->envname(env("BLOCK_SIZE"))->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--shutdown-timeout", f->shutdown_timeout_s, "Seconds to let aborted responses go out at shutdown")->envname(env("SHUTDOWN_TIMEOUT"))->capture_default_str();
  return [f] { return run_serve(*f); };
}

}  // namespace zl::cli
