// What `zerolayer monitor` shows, built from stats snapshots
// (transport/stats_reader.h): a top-like summary, the per-request latency
// breakdown with its aggregate, the signature histogram, the configuration,
// and all of it as JSON. Pure functions of the snapshots: the command itself
// (cmd_monitor.cpp) owns the terminal and the refresh loop.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>

#include "core/gpu_counters.h"
#include "transport/stats_reader.h"

namespace zl::cli {

// The server's GPU as the monitor reads it through NVML (the stats region has
// no GPU counters): `device` empty on the CPU, when nothing is shown; else a
// sample, or why there is none (no NVML, no such device).
struct GpuView {
  std::string device;  // "cuda:N"
  std::optional<GpuSample> sample;
  std::string unavailable;
};

// `before` is the previous refresh (rates and quantiles over the interval
// between them), or nullptr: then rates are averages since the server started.
std::string render_summary(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& name,
                           const GpuView& gpu);
// The last `max_requests` finished requests, phase by phase in µs, then the aggregate over all.
std::string render_latency_breakdown(const StatsSnapshot& s, size_t max_requests);
std::string render_signatures(const StatsSnapshot& s);
std::string render_config(const StatsSnapshot& s, const std::string& name);
// Everything, for scripts: times in ns as integers, plus µs summaries; "gpu"
// (or "gpu_unavailable", the reason) only when gpu.device names one.
nlohmann::ordered_json monitor_json(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& name,
                                    const GpuView& gpu);

}  // namespace zl::cli
