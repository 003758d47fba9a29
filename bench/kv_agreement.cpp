// Greedy agreement of each KV-cache format with the f32 cache over long
// generations, one JSON line per format: the same prompts (built in, or one
// per line of --prompts-file) decoded greedily for --tokens tokens (eos
// ignored) by an engine with that --kv-cache-dtype, against an engine with
// f32 KV. Per format: how many continuations are identical, the position of
// each one's first differing token, and the mean length of the agreeing
// prefix; and, where one differs, the f32 run's top-1 / top-2 log-probability
// margin at that step (a near tie flips under any rounding). Once two greedy
// runs differ by one token they continue from different texts, so only the
// prefix is compared.
//   build/bench/kv_agreement --model ~/.cache/zerolayer/gemma-3-270m-q4_k_m.gguf --tokens 256
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "engine/inbox.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

const char* const kPrompts[] = {
    "The history of the printing press begins in the fifteenth century, when",
    "Once upon a time, in a small village by the sea, there lived",
    "def merge_sort(items):\n    \"\"\"Sort a list with merge sort.\"\"\"\n",
    "The three laws of thermodynamics can be summarized as follows:",
    "Here is a recipe for a simple tomato soup. Ingredients:",
    "In 1969, the Apollo 11 mission",
    "The main differences between TCP and UDP are",
    "Dear hiring manager, I am writing to apply for",
};

// A continuation: its tokens and, when asked for, each step's top-1 / top-2
// log-probability margin.
struct Continuation {
  std::vector<int32_t> tokens;
  std::vector<float> margins;
};

// Collects one request's tokens; wakes the bench thread when it finishes.
class TokenSink : public EventSink {
 public:
  void on_token(const TokenEvent& event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    out_.tokens.push_back(event.token);
    if (event.top_logprobs.size() >= 2)
      out_.margins.push_back(event.top_logprobs[0].logprob - event.top_logprobs[1].logprob);
  }
  void on_finish(const FinishEvent&) override {
    done_.store(1, std::memory_order_release);
    futex_wake_all(&done_);
  }
  Continuation wait() {
    while (done_.load(std::memory_order_acquire) == 0) futex_wait(&done_, 0);
    std::lock_guard<std::mutex> lock(mutex_);
    return out_;
  }

 private:
  std::mutex mutex_;
  Continuation out_;
  std::atomic<uint32_t> done_{0};
};

struct Options {
  std::string model;
  std::string prompts_file;
  std::vector<std::string> kv_dtypes = {"f16", "bf16", "q8_0", "fp8"};
  int tokens = 256, threads = 0;
};

// Every prompt's greedy continuation with one KV format, all in one batch.
StatusOr<std::vector<Continuation>> generate(const Options& o, KvCacheDtype dtype,
                                             const std::vector<std::string>& prompts) {
  EngineConfig config;
  config.model = o.model;
  config.num_threads = o.threads;
  config.kv_cache_bytes = int64_t{512} << 20;
  config.kv_cache_dtype = dtype;
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(config));
  std::vector<std::shared_ptr<TokenSink>> sinks;
  for (const std::string& prompt : prompts) {
    auto sink = std::make_shared<TokenSink>();
    Request r;
    r.prompt_text = prompt;
    r.max_new_tokens = o.tokens;
    r.sampling.temperature = 0.0f;
    r.sampling.num_top_logprobs = dtype == KvCacheDtype::kF32 ? 2 : 0;
    r.ignore_eos = true;
    r.sink = sink;
    ZL_RETURN_IF_ERROR(engine->submit(std::move(r)).status());
    sinks.push_back(sink);
  }
  std::vector<Continuation> out;
  for (auto& sink : sinks) out.push_back(sink->wait());
  return out;
}

Status run(const Options& o) {
  std::vector<std::string> prompts(std::begin(kPrompts), std::end(kPrompts));
  if (!o.prompts_file.empty()) {
    std::ifstream in(o.prompts_file);
    if (!in) return not_found("--prompts-file ", o.prompts_file, ": cannot open");
    prompts.clear();
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) prompts.push_back(line);
  }
  ZL_ASSIGN_OR_RETURN(const auto reference, generate(o, KvCacheDtype::kF32, prompts));
  for (const std::string& name : o.kv_dtypes) {
    ZL_ASSIGN_OR_RETURN(const KvCacheDtype dtype, parse_kv_cache_dtype(name));
    ZL_ASSIGN_OR_RETURN(const auto got, generate(o, dtype, prompts));
    int identical = 0;
    size_t longest = 0;  // the f32 run's longest continuation (a short context ends them early)
    double prefix_sum = 0;
    std::string firsts, margins;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const std::vector<int32_t>& want = reference[i].tokens;
      const std::vector<int32_t>& have = got[i].tokens;
      size_t same = 0;
      while (same < have.size() && same < want.size() && have[same] == want[same]) ++same;
      identical += same == want.size() && same == have.size();
      longest = std::max(longest, want.size());
      prefix_sum += static_cast<double>(same);
      firsts += (i ? "," : "") + std::to_string(same);
      if (same < reference[i].margins.size())
        margins += (margins.empty() ? "" : ",") + std::to_string(reference[i].margins[same]);
    }
    std::printf("{\"bench\":\"kv_agreement\",\"model\":\"%s\",\"kv_dtype\":\"%s\",\"tokens\":%d,\"prompts\":%zu,"
                "\"generated_max\":%zu,\"identical\":%d,\"agreeing_prefix\":[%s],\"agreeing_prefix_mean\":%.1f,"
                "\"f32_margin_at_difference\":[%s]}\n",
                o.model.c_str(), kv_cache_dtype_name(dtype), o.tokens, prompts.size(), longest, identical, firsts.c_str(),
                prefix_sum / static_cast<double>(prompts.size()), margins.c_str());
    std::fflush(stdout);
  }
  return ok_status();
}

}  // namespace
}  // namespace zl

int main(int argc, char** argv) {
  zl::Options o;
  CLI::App app{"Greedy agreement of each KV-cache format with the f32 cache, as JSON lines"};
  app.add_option("--model", o.model, "A model the engine loads (a trained one: random weights say little)")->required();
  app.add_option("--kv-dtypes", o.kv_dtypes, "Formats to compare with f32: f16, bf16, q8_0, fp8")->delimiter(',');
  app.add_option("--tokens", o.tokens, "Greedy tokens per prompt")->check(CLI::Range(1, 4096));
  app.add_option("--prompts-file", o.prompts_file, "One prompt per line (default: 8 built in)");
  app.add_option("--threads", o.threads, "Compute threads (0: one per core)");
  CLI11_PARSE(app, argc, argv);
  const zl::Status status = zl::run(o);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
