// zerolayer serve's flags: their table (CLI11, each also ZEROLAYER_<FLAG>)
// and their translation into the engine's and the HTTP server's configs.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>

#include "common.h"
#include "server/http_server.h"
#include "zerolayer/engine.h"
#include "zerolayer/status.h"

namespace zl::cli {

// The model when --model is not given: a built-in synthetic Llama (seeded
// random weights, no files), big enough that its output and speed look like
// a real small model's, small enough to load in seconds.
inline constexpr const char* kDefaultModel = "dummy:llama-110m";

struct ServeFlags {
  ModelFlags model;
  server::HttpServerConfig http;
  // "auto": /zerolayer-<port>, so that servers on one host never share a
  // name by default; "none" or "": no shared memory.
  std::string shm_name = "auto";
  std::string shm_size = "64M";
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  int max_num_waiting = 4096;
  int prefill_first_ms = 0;
  std::string cache_policy = "contiguous";
  std::string overlap_scheduling = "on";
  std::string kv_cache_memory = "auto";
  std::string compaction_bytes_per_step = "4M";  // EngineConfig's default
  bool swa_full = false;
  bool kv_populate = true;  // full speed from the first request
  int block_size = 16;
  double shutdown_timeout_s = 30.0;
  bool disable_access_log = false;
  std::string kv_events_endpoint;
  std::string kv_events_replay_endpoint;
  std::string kv_events_topic;
};

void add_serve_flags(CLI::App& cmd, ServeFlags& f);

// A memory flag: a fraction in (0, 1] (fraction > 0, bytes 0), a size with a
// unit (K, M, G, T, powers of 1024, or B: bytes > 0), or, where allow_auto,
// "auto" (both 0). Anything else, "2.5" or "512" included, is an error
// naming the flag.
Status parse_memory(const std::string& text, const char* flag, bool allow_auto, int64_t& bytes, double& fraction);

// A size flag: a number with a unit as parse_memory reads them, or, where
// allow_zero, "0". A bare number ("512") or a fraction is an error naming the flag.
Status parse_size(const std::string& text, const char* flag, bool allow_zero, int64_t& bytes);

StatusOr<EngineConfig> serve_engine_config(const ServeFlags& f);

// --shm-name's segment for a server listening on `port`.
std::string shm_name_for(const ServeFlags& f, int32_t port);

}  // namespace zl::cli
