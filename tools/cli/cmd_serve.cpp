// zerolayer serve: loads a model and serves it over HTTP (OpenAI-compatible,
// src/server/) and shared memory (src/transport/), until SIGINT or SIGTERM.
//
// The HTTP port is bound and the shared-memory name checked before the model
// loads, so a clash fails at once and /health can say "loading" (503)
// meanwhile. On SIGTERM or SIGINT the server drains: new requests get 503,
// those in flight have --shutdown-timeout seconds to finish (a second signal
// cuts that short), then what is left is aborted (every request still gets
// its terminal event; streams get a final chunk and [DONE]), the
// shared-memory segment is removed and the process exits 0. SIGHUP is
// ignored: the logs go to stderr, which has nothing to reopen.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <thread>

#include "bundle/chat_prompt.h"
#include "commands.h"
#include "common.h"
#include "core/log.h"
#include "serve_flags.h"
#include "server/http_server.h"
#include "transport/shm_server.h"
#include "zerolayer/engine.h"

namespace zl::cli {
namespace {

// Time the aborted responses get to go out once the drain is over.
constexpr double kAbortGraceSeconds = 2.0;

StatusOr<std::unique_ptr<ShmServer>> start_shm(Engine& engine, const ServeFlags& f, const std::string& name) {
  ShmServerConfig config;
  config.name = name;
  int64_t bytes = 0;
  ZL_RETURN_IF_ERROR(parse_size(f.shm_size, "--shm-size", /*allow_zero=*/false, bytes));
  config.size_bytes = static_cast<uint64_t>(bytes);
  config.chat_template = f.http.chat_template;
  config.tokenizer_path = f.model.tokenizer;
  return ShmServer::start(engine, config);
}

// Waits for a signal of `signals` (blocked in every thread, taken here) until
// `done` is set or `deadline` passes; returns it, or 0. SIGHUP is logged and
// waited through.
int wait_signal(const sigset_t& signals, const std::atomic<bool>* done,
                std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
  timespec tick{0, 100 * 1000 * 1000};
  while ((!done || !done->load()) && std::chrono::steady_clock::now() < deadline) {
    int sig = sigtimedwait(&signals, nullptr, &tick);
    if (sig == SIGHUP) {
      log_info("serve: SIGHUP ignored (logs go to stderr; nothing to reopen)");
    } else if (sig > 0) {
      return sig;
    }
  }
  return 0;
}

// Checks what can fail without the model, before it loads.
Status check_before_load(const ServeFlags& f) {
  std::error_code ec;
  if (!f.http.chat_template.empty() && f.http.chat_template != "chatml") {
    if (!std::filesystem::is_regular_file(f.http.chat_template, ec))
      return invalid_argument("--chat-template: '", f.http.chat_template, "' is not a file (or 'chatml')");
    // One that does not parse stops start-up (it used to leave every chat request a 400).
    StatusOr<LoadedChatTemplate> parsed = load_chat_template("", "", "", f.http.chat_template, nullptr);
    if (!parsed.ok()) return parsed.status().with_prefix("--chat-template");
  }
  int64_t bytes = 0;
  return parse_size(f.shm_size, "--shm-size", /*allow_zero=*/false, bytes);
}

// SIGTERM or SIGINT: drain, then abort what is left, then stop.
void drain_and_stop(server::HttpServer& http, std::unique_ptr<ShmServer>& shm, Engine& engine,
                    const sigset_t& signals, double timeout_s) {
  log_info("serve: draining: new requests get 503; those in flight have ", timeout_s, " s to finish");
  http.begin_drain();
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout_s));
  std::atomic<bool> idle{false};
  std::thread watcher([&] {
    while (std::chrono::steady_clock::now() < deadline && !idle.load()) {
      const EngineStats stats = engine.stats();
      if (http.idle() && stats.num_running == 0 && stats.num_waiting == 0) idle.store(true);
      else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    idle.store(true);
  });
  if (int sig = wait_signal(signals, &idle, deadline); sig != 0)
    log_info("serve: signal ", sig, " during the drain: aborting what is left");
  idle.store(true);
  watcher.join();
  http.shutdown(kAbortGraceSeconds);
  shm.reset();  // aborts its requests left in flight, removes the segment
}

int run_serve(ServeFlags& f) {
  if (f.model.model.empty()) f.model.model = kDefaultModel;
  StatusOr<EngineConfig> config = serve_engine_config(f);
  if (!config.ok()) return report_error(config.status());
  if (Status s = check_before_load(f); !s.ok()) return report_error(s);
  f.http.tokenizer_path = f.model.tokenizer;
  f.http.device = config->device;
  f.http.access_log = !f.disable_access_log;

  // Blocked before any thread starts, so every thread inherits the mask and
  // only wait_signal() sees the signals.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto http = server::HttpServer::start(f.http);
  if (!http.ok()) return report_error(http.status());
  const std::string shm_name = shm_name_for(f, (*http)->port());
  if (!shm_name.empty()) {
    if (Status s = ShmServer::check_name(shm_name); !s.ok()) {
      (*http)->shutdown(0.0);
      return report_error(s.with_prefix("--shm-name"));
    }
  }
  std::printf("zerolayer: listening on %s://%s:%d (loading %s)\n", (*http)->scheme(), f.http.host.c_str(),
              (*http)->port(), config->model.c_str());
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
  if (!shm_name.empty()) {
    auto started = start_shm(**engine, f, shm_name);
    if (!started.ok()) {
      (*http)->shutdown(0.0);
      return report_error(started.status().with_prefix("shared memory " + shm_name));
    }
    shm = std::move(*started);
    std::printf("zerolayer: shared memory at %s\n", shm_name.c_str());
  }
  (*http)->attach_engine(**engine);

  std::printf("zerolayer: serving %s on %s://%s:%d (POST /v1/completions, GET /health); Ctrl-C stops\n",
              f.http.served_model_name.empty() ? config->model.c_str() : f.http.served_model_name.c_str(),
              (*http)->scheme(), f.http.host.c_str(), (*http)->port());
  std::fflush(stdout);

  int sig = wait_signal(signals, nullptr);
  std::fprintf(stderr, "zerolayer: signal %d, shutting down\n", sig);
  drain_and_stop(**http, shm, **engine, signals, f.shutdown_timeout_s);
  engine->reset();
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over HTTP (OpenAI API) and shared memory");
  add_serve_flags(*cmd, *f);
  return [f] { return run_serve(*f); };
}

}  // namespace zl::cli
