// What `zerolayer monitor` shows, built from stats snapshots
// (transport/stats_reader.h): a top-like summary, the per-request latency
// breakdown with its aggregate, the signature histogram, the configuration,
// and all of it as JSON. Pure functions of the snapshots: the command itself
// (cmd_monitor.cpp) owns the terminal and the refresh loop.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

#include "transport/stats_reader.h"

namespace zl::cli {

// `before` is the previous refresh (rates and quantiles over the interval
// between them), or nullptr: then rates are averages since the server started.
std::string render_summary(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& name);
// The last `max_requests` finished requests, phase by phase in µs, then the aggregate over all.
std::string render_latency_breakdown(const StatsSnapshot& s, size_t max_requests);
std::string render_signatures(const StatsSnapshot& s);
std::string render_config(const StatsSnapshot& s, const std::string& name);
// Everything, for scripts: times in ns as integers, plus µs summaries.
nlohmann::ordered_json monitor_json(const StatsSnapshot& now, const StatsSnapshot* before, const std::string& name);

}  // namespace zl::cli
