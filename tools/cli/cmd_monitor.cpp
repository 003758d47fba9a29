// zerolayer monitor: attaches to a running server's stats region through its
// shared-memory segment (read-only, no HTTP, nothing asked of the server) and
// shows it, refreshed every --interval seconds until Ctrl-C: on a terminal
// the view is redrawn in place (ANSI escapes), otherwise each refresh is
// printed after the last. --once prints one and exits; --json prints JSON
// (one document per refresh, one per line). On a server that runs on
// cuda:N the view adds that GPU's NVML counters, read by the monitor itself
// (core/gpu_counters.h); the device comes from the stats region's config, or
// from --device (ZEROLAYER_DEVICE, as for serve) where the server predates
// that field.
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
#include "zerolayer/device.h"

namespace zl::cli {
namespace {

struct MonitorFlags {
  std::string shm_name = "/zerolayer-8000";  // serve's default on port 8000
  std::string device;  // empty: the server's, from its stats region
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

std::string render(const MonitorFlags& f, const StatsSnapshot& now, const StatsSnapshot* before, const GpuView& gpu) {
  if (f.json) return monitor_json(now, before, f.shm_name, gpu).dump() + "\n";
  std::string out;
  auto add = [&](const std::string& section) { out += (out.empty() ? "" : "\n") + section; };
  if (f.config) add(render_config(now, f.shm_name));
  if (f.latency_breakdown) add(render_latency_breakdown(now, static_cast<size_t>(f.num_requests)));
  if (f.signature_histogram) add(render_signatures(now));
  if (out.empty()) add(render_summary(now, before, f.shm_name, gpu));
  return out;
}

// Sleeps up to `seconds`, waking early on Ctrl-C.
void sleep_interruptibly(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_interrupted && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

// Samples `counters` into `view`; a failed read leaves the reason instead.
void sample_gpu(const GpuCounters* counters, GpuView& view) {
  if (!counters) return;
  StatusOr<GpuSample> sample = counters->read();
  if (sample.ok()) {
    view.sample = std::move(*sample);
  } else {
    view.sample.reset();
    view.unavailable = sample.status().message();
  }
}

// The device whose counters to show: --device, else the one the server's
// stats region names (empty from older servers: cpu).
StatusOr<Device> monitored_device(const MonitorFlags& f, StatsReader& reader) {
  if (!f.device.empty()) return parse_device(f.device);
  ZL_ASSIGN_OR_RETURN(StatsSnapshot snapshot, reader.read());
  return parse_device(snapshot.config.device[0] != '\0' ? snapshot.config.device : "cpu");
}

int run_monitor(const MonitorFlags& f) {
  auto reader = StatsReader::open(f.shm_name);
  if (!reader.ok()) return report_error(reader.status());
  StatusOr<Device> device = monitored_device(f, **reader);
  if (!device.ok()) return report_error(device.status());
  GpuView gpu;
  std::unique_ptr<GpuCounters> counters;
  if (device->is_cuda()) {
    gpu.device = device_name(*device);
    auto opened = GpuCounters::open(device->index);
    if (opened.ok()) counters = std::move(*opened);
    else gpu.unavailable = opened.status().message();
  }
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
    sample_gpu(counters.get(), gpu);
    std::string text = render(f, *now, before ? &*before : nullptr, gpu);
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
  cmd->add_option("--device", f->device,
                  "The server's device (serve's --device; default: the one its stats region names): for cuda:N, "
                  "the view adds that GPU's NVML counters")
      ->envname("ZEROLAYER_DEVICE");
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
