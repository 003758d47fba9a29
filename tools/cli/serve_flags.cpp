#include "serve_flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace zl::cli {

namespace {

// value (finite, > 0) times suffix's unit (K, M, G, T: powers of 1024; B:
// bytes) into bytes; wrong(why) makes the error that names the flag.
template <class Wrong>
Status bytes_with_unit(double value, const std::string& suffix, const Wrong& wrong, int64_t& bytes) {
  double scale = 0;
  if (suffix == "B") scale = 1;
  else if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1024.0;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T" || suffix == "t" || suffix == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  else return wrong("has an unknown unit '" + suffix + "'");
  if (value * scale > 9e18) return wrong("is too large");
  if (value * scale < 1) return wrong("is less than a byte");
  bytes = static_cast<int64_t>(value * scale);
  return ok_status();
}

// The positive number at the start of text (end: where it stops), or false.
bool leading_positive(const std::string& text, double& value, const char*& end) {
  char* stop = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &stop);
  end = stop;
  return stop != text.c_str() && errno == 0 && std::isfinite(value) && value > 0;
}

}  // namespace

Status parse_memory(const std::string& text, const char* flag, bool allow_auto, int64_t& bytes, double& fraction) {
  bytes = 0;
  fraction = 0;
  if (allow_auto && text == "auto") return ok_status();
  const auto wrong = [&](const std::string& why) {
    return invalid_argument(flag, " must be ", allow_auto ? "auto, " : "", "a fraction in (0, 1] or a size with a unit "
                            "(512M, 2G, 1.5GiB); '", text, "' ", why);
  };
  double value = 0;
  const char* end = nullptr;
  if (!leading_positive(text, value, end)) return wrong("is not a positive number");
  const std::string suffix(end);
  if (suffix.empty()) {
    // "2.5" or "512" used to mean 2 or 512 bytes: a unit is required.
    if (value > 1.0) return wrong("has no unit");
    fraction = value;
    return ok_status();
  }
  return bytes_with_unit(value, suffix, wrong, bytes);
}

Status parse_size(const std::string& text, const char* flag, bool allow_zero, int64_t& bytes) {
  bytes = 0;
  if (allow_zero && text == "0") return ok_status();
  const auto wrong = [&](const std::string& why) {
    return invalid_argument(flag, " must be ", allow_zero ? "0 or " : "", "a size with a unit (512K, 4M, 1.5GiB); '",
                            text, "' ", why);
  };
  double value = 0;
  const char* end = nullptr;
  if (!leading_positive(text, value, end)) return wrong("is not a positive number");
  if (*end == '\0') return wrong("has no unit");
  return bytes_with_unit(value, end, wrong, bytes);
}

StatusOr<EngineConfig> serve_engine_config(const ServeFlags& f) {
  ZL_ASSIGN_OR_RETURN(EngineConfig config, engine_config_from_flags(f.model));
  config.max_num_seqs = f.max_num_seqs;
  config.max_num_batched_tokens = f.max_num_batched_tokens;
  config.max_num_waiting = f.max_num_waiting;
  config.prefill_first_ms = f.prefill_first_ms;
  config.block_size = f.block_size;
  ZL_ASSIGN_OR_RETURN(config.cache_policy, parse_cache_policy(f.cache_policy));
  config.overlap_scheduling = f.overlap_scheduling == "on";
  config.full_window_kv = f.swa_full;
  config.kv_populate = f.kv_populate;
  config.kv_events_endpoint = f.kv_events_endpoint;
  config.kv_events_replay_endpoint = f.kv_events_replay_endpoint;
  config.kv_events_topic = f.kv_events_topic;
  if (config.kv_events_endpoint.empty() && !config.kv_events_replay_endpoint.empty())
    return invalid_argument("--kv-events-replay-endpoint needs --kv-events-endpoint");
  ZL_RETURN_IF_ERROR(
      parse_memory(f.kv_cache_memory, "--kv-cache-memory", true, config.kv_cache_bytes, config.kv_cache_fraction));
  ZL_RETURN_IF_ERROR(parse_size(f.compaction_bytes_per_step, "--compaction-bytes-per-step", /*allow_zero=*/true,
                                config.compaction_bytes_per_step));
  return config;
}

std::string shm_name_for(const ServeFlags& f, int32_t port) {
  if (f.shm_name == "none") return "";  // an empty environment value counts as unset: "none" turns it off
  return f.shm_name == "auto" ? "/zerolayer-" + std::to_string(port) : f.shm_name;
}

namespace {

void add_http_flags(CLI::App& cmd, server::HttpServerConfig& h) {
  auto env = [](const char* name) { return std::string("ZEROLAYER_") + name; };
  cmd.add_option("--host", h.host, "Address to listen on")->envname(env("HOST"))->capture_default_str();
  cmd.add_option("--port", h.port, "TCP port (0: any free port)")->envname(env("PORT"))->check(CLI::Range(0, 65535))->capture_default_str();
  cmd.add_option("--api-key", h.api_key, "Require 'Authorization: Bearer KEY' on every route but /health (and /metrics, unless --metrics-require-key)")->envname(env("API_KEY"));
  cmd.add_flag("--metrics-require-key", h.metrics_require_key, "With --api-key, /metrics wants the key too (Prometheus scrapers usually send none)")->envname(env("METRICS_REQUIRE_KEY"));
  cmd.add_option("--allowed-origins", h.allowed_origins,
                 "CORS: origins whose browsers may call the API ('*': any); answers preflight OPTIONS requests. "
                 "Default: none, no CORS headers")
      ->envname(env("ALLOWED_ORIGINS"))
      ->delimiter(',');
  cmd.add_option("--ssl-certfile", h.ssl_certfile, "Serve HTTPS with this PEM certificate (chain); needs --ssl-keyfile")->envname(env("SSL_CERTFILE"));
  cmd.add_option("--ssl-keyfile", h.ssl_keyfile, "The PEM private key of --ssl-certfile")->envname(env("SSL_KEYFILE"));
  cmd.add_option("--served-model-name", h.served_model_name, "Model name in the API (default: the --model value)")->envname(env("SERVED_MODEL_NAME"));
  cmd.add_option("--http-threads", h.num_io_threads, "HTTP I/O threads")->envname(env("HTTP_THREADS"))->check(CLI::Range(1, 256))->capture_default_str();
  cmd.add_option("--chat-template", h.chat_template, "Chat template for /v1/chat/completions: a Jinja file, or 'chatml' (default: the model's own)")->envname(env("CHAT_TEMPLATE"));
  cmd.add_option("--tool-call-parser", h.tool_call_parser,
                 "How tool calls are read from chat outputs: auto (the chat template's syntax), none, hermes "
                 "(<tool_call> JSON, Qwen and Hermes), llama3_json (Llama 3.x), mistral ([TOOL_CALLS]), granite "
                 "(<|tool_call|>), deepseek_v3 (DeepSeek V3, R1), deepseek_v31 (DeepSeek V3.1), kimi_k2 (Kimi K2), "
                 "functionary_v3_2 (>>>name), "
                 "command_r7b (<|START_ACTION|>), openai (gpt-oss's harmony)")
      ->envname(env("TOOL_CALL_PARSER"))
      ->check(CLI::IsMember({"auto", "none", "hermes", "llama3_json", "mistral", "granite", "deepseek_v3", "deepseek_v31", "kimi_k2",
                             "functionary_v3_2", "command_r7b", "openai"}))
      ->capture_default_str();
  cmd.add_option("--reasoning-parser", h.reasoning_parser,
                 "How reasoning is read from chat outputs: auto (on when the chat template knows the syntax), none "
                 "(it stays in the content), deepseek_r1 or qwen3 (vLLM's names; both read <think> ... </think>), "
                 "command_r7b (<|START_THINKING|>), openai_gptoss (harmony's analysis channel). It goes to "
                 "message.reasoning and reasoning_content")
      ->envname(env("REASONING_PARSER"))
      ->check(CLI::IsMember({"auto", "none", "deepseek_r1", "qwen3", "command_r7b", "openai_gptoss"}))
      ->capture_default_str();
}

}  // namespace

void add_serve_flags(CLI::App& cmd, ServeFlags& f) {
  add_model_flags(cmd, f.model, /*model_required=*/false);
  CLI::Option* model = cmd.get_option("--model");
  model->description("Model to serve: " + model->get_description() + ". Default: " + kDefaultModel +
                     ", a built-in synthetic model");
  add_http_flags(cmd, f.http);
  auto env = [](const char* name) { return std::string("ZEROLAYER_") + name; };
  cmd.add_flag("--disable-access-log", f.disable_access_log, "No access-log line per request on stderr")->envname(env("DISABLE_ACCESS_LOG"));
  cmd.add_option("--shm-name", f.shm_name, "Shared-memory segment name: auto (/zerolayer-PORT), a name like /mine, or none (or '': no shared memory)")->envname(env("SHM_NAME"))->capture_default_str();
  cmd.add_option("--shm-size", f.shm_size, "Shared-memory segment size (e.g. 64M)")->envname(env("SHM_SIZE"))->capture_default_str();
  cmd.add_option("--max-num-seqs", f.max_num_seqs, "Sequences in one batch at most")->envname(env("MAX_NUM_SEQS"))->check(CLI::Range(1, 65536))->capture_default_str();
  cmd.add_option("--max-num-batched-tokens", f.max_num_batched_tokens, "Tokens in one forward pass at most")->envname(env("MAX_NUM_BATCHED_TOKENS"))->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd.add_option("--prefill-first-ms", f.prefill_first_ms,
                 "Prefill first: while a prompt prefills, passes run prompts alone and decoding requests wait, at "
                 "most this many ms in a row (lower TTFT under load, higher inter-token time); 0: every pass mixes "
                 "decodes and prefill chunks")
      ->envname(env("PREFILL_FIRST_MS"))
      ->check(CLI::Range(0, 60000))
      ->capture_default_str();
  cmd.add_option("--max-num-waiting", f.max_num_waiting, "Waiting-queue bound; beyond it requests get 503")->envname(env("MAX_NUM_WAITING"))->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd.add_option("--cache-policy", f.cache_policy, "KV memory policy: contiguous, paged or hybrid")->envname(env("CACHE_POLICY"))->check(CLI::IsMember({"contiguous", "paged", "hybrid"}))->capture_default_str();
  cmd.add_option("--overlap-scheduling", f.overlap_scheduling, "Plan and publish beside the running forward pass (CPU): on or off")->envname(env("OVERLAP_SCHEDULING"))->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  cmd.add_option("--kv-cache-memory", f.kv_cache_memory,
                 "KV pool: auto (what --max-num-seqs sequences of the full context need, at most a quarter of total "
                 "memory), a size with a unit (512M, 2G), or a fraction of total memory (0.3)")
      ->envname(env("KV_CACHE_MEMORY"))
      ->capture_default_str();
  cmd.add_flag("--kv-populate,!--no-kv-populate", f.kv_populate,
               "Commit the KV pool's memory at start (CPU, on every compute thread; the time it took is logged), so "
               "that no request waits for the kernel to back its first blocks. On by default; --no-kv-populate "
               "starts faster and lets the first requests fault the pool in")
      ->envname(env("KV_POPULATE"));
  cmd.add_option("--compaction-bytes-per-step", f.compaction_bytes_per_step,
                 "Contiguous and hybrid policies: KV bytes compaction copies a step at most, in slices beside the "
                 "running pass, so that it never stalls the requests running (a size with a unit: 512K, 4M); 0: "
                 "each compaction at once, in one step")
      ->envname(env("COMPACTION_BYTES_PER_STEP"))
      ->capture_default_str();
  cmd.add_flag("--swa-full", f.swa_full, "Sliding-window layers keep KV for every position, not only their window (more memory; as llama.cpp's --swa-full)")->envname(env("SWA_FULL"));
  cmd.add_option("--block-size", f.block_size, "Tokens per KV block")->envname(env("BLOCK_SIZE"))->check(CLI::Range(1, 1024))->capture_default_str();
  cmd.add_option("--kv-events-endpoint", f.kv_events_endpoint,
                 "Publish KV-cache events (vLLM's KVEventBatch over ZMQ PUB) on this endpoint, e.g. tcp://*:5557, "
                 "for vllm-router --policy kv_aware --kv-event-source http://HOST:PORT=tcp://HOST:5557")
      ->envname(env("KV_EVENTS_ENDPOINT"));
  cmd.add_option("--kv-events-replay-endpoint", f.kv_events_replay_endpoint,
                 "Serve recent KV-event batches again on this ZMQ ROUTER endpoint, e.g. tcp://*:5558 "
                 "(vllm-router --kv-event-replay-source)")
      ->envname(env("KV_EVENTS_REPLAY_ENDPOINT"));
  cmd.add_option("--kv-events-topic", f.kv_events_topic, "Topic of the KV-event messages (vllm-router reads '')")
      ->envname(env("KV_EVENTS_TOPIC"));
  cmd.add_option("--shutdown-timeout", f.shutdown_timeout_s,
                 "On SIGTERM or SIGINT: seconds the requests in flight have to finish before they are aborted "
                 "(new ones get 503 meanwhile; a second signal aborts at once)")
      ->envname(env("SHUTDOWN_TIMEOUT"))
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
}

}  // namespace zl::cli
