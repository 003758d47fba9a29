// zerolayer monitor: attaches to a running server's stats region through its
// shared-memory segment (read-only, no HTTP, nothing asked of the server) and
// shows it, refreshed every --interval seconds until Ctrl-C: on a terminal
// the view is redrawn in place (ANSI escapes), otherwise each refresh is
// printed after the last. --once prints one and exits; --json prints JSON
// (one document per refresh, one per line).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "commands.h"
#include "common.h"
#include "monitor_view.h"
#include "transport/stats_reader.h"

namespace zl::cli {
namespace {

struct MonitorFlags {
  std::string shm_name = "/zerolayer";
  bool latency_breakdown = false;
  bool signature_histogram = false;
  bool config = false;
  bool json = false;
  bool once = false;
  double interval_s = 1.0;
  int num_requests = 5;
};

volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int) { g_interrupted = 1; }

std::string render(const MonitorFlags& f, const StatsSnapshot& now, const StatsSnapshot* before) {
  if (f.json) return monitor_json(now, before, f.shm_name).dump() + "\n";
  std::string out;
  auto add = [&](const std::string& section) { out += (out.empty() ? "" : "\n") + section; };
  if (f.config) add(render_config(now, f.shm_name));
  if (f.latency_breakdown) add(render_latency_breakdown(now, static_cast<size_t>(f.num_requests)));
  if (f.signature_histogram) add(render_signatures(now));
  if (out.empty()) add(render_summary(now, before, f.shm_name));
  return out;
}

// Sleeps up to `seconds`, waking early on Ctrl-C.
void sleep_interruptibly(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_interrupted && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

int run_monitor(const MonitorFlags& f) {
  auto reader = StatsReader::open(f.shm_name);
  if (!reader.ok()) return report_error(reader.status());
  const bool redraw = !f.once && !f.json && isatty(STDOUT_FILENO);
  if (!f.once) {
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
  }
  if (redraw) std::fputs("\x1b[?25l", stdout);  // hide the cursor while redrawing
  std::optional<StatsSnapshot> before;
  int exit_code = 0;
  for (bool first = true; !g_interrupted; first = false) {
    auto now = (*reader)->read();
    if (!now.ok()) {
      exit_code = report_error(now.status());
      break;
    }
    std::string text = render(f, *now, before ? &*before : nullptr);
    if (redraw) text = "\x1b[H\x1b[2J" + text + "\n(refreshed every " + std::to_string(f.interval_s).substr(0, 4) +
                       " s; Ctrl-C quits)\n";
    else if (!first && !f.json) text = "\n" + text;
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);
    if (f.once) break;
    before = std::move(*now);
    sleep_interruptibly(f.interval_s);
  }
  if (redraw) std::fputs("\x1b[?25h", stdout);
  std::fflush(stdout);
  return exit_code;
}

}  // namespace

Command add_monitor_command(CLI::App& app) {
  auto f = std::make_shared<MonitorFlags>();
  CLI::App* cmd = app.add_subcommand("monitor", "Watch a running server through its shared-memory stats region");
  cmd->add_option("--shm-name", f->shm_name, "The server's shared-memory segment (serve's --shm-name)")
      ->envname("ZEROLAYER_SHM_NAME")
      ->capture_default_str();
  cmd->add_flag("--latency-breakdown", f->latency_breakdown,
                "Per-request phases (transport in, admission, queue, prefill chunks, decode steps, transport out) "
                "in µs, and the aggregate");
  cmd->add_flag("--signature-histogram", f->signature_histogram, "The most reused prefix chains (cache signatures)");
  cmd->add_flag("--config", f->config, "The server's running configuration");
  cmd->add_flag("--json", f->json, "JSON (everything), one document per refresh");
  cmd->add_flag("--once", f->once, "Print one refresh and exit");
  cmd->add_option("--interval", f->interval_s, "Seconds between refreshes")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  cmd->add_option("--requests", f->num_requests, "Requests shown by --latency-breakdown (newest)")
      ->check(CLI::Range(1, int(ZL_STATS_REQUEST_RING_SLOTS)))
      ->capture_default_str();
  return [f] { return run_monitor(*f); };
}

}  // namespace zl::cli
