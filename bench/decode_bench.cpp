// Decode and prefill speed of the forward pass, per weight format, as JSON
// lines. For each --formats entry the model is loaded (converted at load as
// --dtype / --quantization would), then:
//   * prefill: one forward of a --prompt token sequence (llama-bench's pp512);
//   * decode at each --batches size B: B sequences (16-token prompts), then
//     --steps forward passes of one token per sequence (llama-bench's tg).
//     With --context N, each sequence's first N positions are instead filled
//     with random keys and values (stored in the KV format, not computed) and
//     decode starts at position N (llama-bench's -d N): what attention over a
//     long context costs beside the weights.
// The KV cache is --kv-cache-dtype (auto: as the engine chooses).
// Every measurement is repeated --runs times; min and median are reported,
// and cpu_tok_s_median counts the calling thread's CPU time instead of wall
// time (with --threads 1 that ignores time slices other processes took).
// The fraction of bandwidth of a decode run is the time of one plain read of
// every weight matrix (bandwidth_probe.h's SpanSweep over the bytes a step
// streams: the packed copy where there is one, the same pages and threads),
// taken just before the run, over the run's time per forward pass: the floor
// "time per token >= weight bytes / bandwidth" measured at the same moment,
// so that other tenants' load on a shared machine moves both alike. With
// --bandwidth-gbs the fraction is against that fixed figure instead.
// A decode line also gives its roofline fraction: the larger of that sweep
// time and the time the step's multiply-adds (batch x parameters) take at the
// dot-product peak of the format's kernels (compute_probe.h: int8 for the
// quantized formats, bf16 for bf16), over the step's time; and which bound.
// The int8 formats' lines add a block roofline fraction: the same with the
// compute time at their instruction mix's peak (compute_probe.h
// int8_block_loop: vpdpbusd and the float step per block of 32 of the
// format of the first layer's wq: Q4_K's has one more step), the most
// their kernels can reach when compute bound; that peak is probed just
// before each run, as the sweep is (a probe of the whole process moved
// 269-444 GMAC/s between processes on the Xeon VM), and block_peak_gmacs is
// the median of the runs'.
// Each decode line also times every step: tok_s_step_median is the batch
// over the median step, and roofline_fraction_step_median (and the block
// one) the fraction against each run's median step; steal_fraction is the
// share of the machine's CPU time its hypervisor gave to other guests
// during the runs (/proc/stat). On a shared VM a vCPU descheduled in the
// middle of a step stalls the threads that wait for its part: such steps
// move the mean, not the median, and the stolen share says how often.
// A mixture-of-experts step streams its dense matrices and, per layer, the
// experts its tokens chose (counted by the model; step_bytes,
// experts_per_layer): the sweep time is scaled to those bytes, and a token's
// multiply-adds count its experts_per_token experts only.
//
// Usage: decode_bench --model dummy:llama-1b --formats f32,bf16,int8,q8_0,q4_0
//                     [--threads 2] [--runs 3] [--steps 16] [--prompt 512] [--batches 1,8]
//        decode_bench --model FILE.gguf --formats stored
//        decode_bench --model dummy:llama-1b --formats bf16 --kv-cache-dtype q8_0 --context 4096 --prompt 0
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <numeric>
#include <random>

#include "bandwidth_probe.h"
#include "compute_probe.h"
#include "bundle/model_loader.h"
#include "core/aligned_vector.h"
#include "kernels/cpu/matmul.h"
#include "model/llama.h"

namespace zl::bench {
namespace {

struct Options {
  std::string model = "dummy:llama-110m";
  std::vector<std::string> formats = {"f32", "bf16", "int8", "q8_0", "q4_0"};
  std::vector<int> batches = {1, 8};
  int threads = 0, runs = 3, steps = 16, prompt = 512, context = 0;
  std::string kv_cache_dtype = "auto";
  double bandwidth_gbs = 0;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CPU time of the calling thread: with --threads 1 on a shared machine,
// tokens per CPU second do not count the time other processes held the core.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The cpu line of /proc/stat: ticks the hypervisor gave to other guests
// while this VM's vCPUs had work (steal), and all ticks. steal < 0 where
// it cannot be read (not Linux).
struct CpuTicks {
  long long steal = -1, total = 0;
};

CpuTicks read_cpu_ticks() {
  CpuTicks t;
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return t;
  long long v[8] = {};  // user nice system idle iowait irq softirq steal
  if (std::fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                  &v[6], &v[7]) == 8) {
    t.steal = v[7];
    t.total = std::accumulate(v, v + 8, 0LL);
  }
  std::fclose(f);
  return t;
}

StatusOr<WeightFormat> parse_format(const std::string& name) {
  WeightFormat f;
  if (name == "stored") return f;
  if (name == "int8" || name == "q8_0" || name == "q4_0" || name == "q5_0" || name == "q5_1" || name == "q4_k" ||
      name == "q6_k") {
    ZL_RETURN_IF_ERROR(parse_quantization_flag(name, f));
  } else {
    ZL_RETURN_IF_ERROR(parse_dtype_flag(name, f));
  }
  return f;
}

// The bytes of a matrix a decode step streams: its packed copy where the
// loader made one (what the AVX-512 kernels read), else its stored rows, plus
// int8's row scales.
std::vector<ByteSpan> matrix_spans(const WeightMatrix& m) {
  std::vector<ByteSpan> spans;
  const int64_t packed = cpu::packed_bytes(m);
  if (m.packed != nullptr && packed > 0) {
    spans.push_back({m.packed, packed});
  } else {
    spans.push_back({static_cast<const uint8_t*>(m.data), m.rows * m.row_bytes()});
  }
  if (m.scales != nullptr) spans.push_back({reinterpret_cast<const uint8_t*>(m.scales), m.rows * 4});
  return spans;
}

// Every matrix's spans (all experts of a MoE model), lm_head once when tied.
std::vector<ByteSpan> weight_spans(const ModelWeights& w) {
  std::vector<ByteSpan> spans;
  auto add = [&](const WeightMatrix& m) {
    for (const ByteSpan& s : matrix_spans(m)) spans.push_back(s);
  };
  for (const LayerWeights& l : w.layers) LayerWeights::for_each_matrix(l, add);
  add(w.lm_head);
  return spans;
}

// A MoE model's experts: their bytes as streamed, and their parameters.
struct ExpertTotals {
  int64_t bytes = 0, params = 0, count = 0;
};

ExpertTotals expert_totals(const ModelWeights& w) {
  ExpertTotals t;
  for (const LayerWeights& l : w.layers)
    for (const ExpertWeights& e : l.experts) {
      ++t.count;
      for (const WeightMatrix* m : {&e.w_gate, &e.w_up, &e.w_down}) {
        for (const ByteSpan& s : matrix_spans(*m)) t.bytes += s.bytes;
        t.params += m->rows * m->cols;
      }
    }
  return t;
}

// Positions [0, context) of each table's sequence, every layer: random keys
// and values in [-1, 1), stored in the cache's format.
void fill_context(KvCache& cache, int32_t num_layers, const std::vector<std::vector<int32_t>>& tables, int context) {
  std::vector<float> values(static_cast<size_t>(cache.kv_dim()));
  uint32_t state = 12345;
  for (const std::vector<int32_t>& table : tables)
    for (int32_t layer = 0; layer < num_layers; ++layer)
      for (int pos = 0; pos < context; ++pos) {
        const cpu::KvLayout& l = cache.layout(layer);
        const int32_t block = table[static_cast<size_t>(pos / cache.block_size())];
        for (uint8_t* arena : {cache.k(layer), cache.v(layer)}) {
          for (float& x : values) {
            state = state * 1664525u + 1013904223u;
            x = static_cast<float>(state >> 8) * (2.0f / 16777216.0f) - 1.0f;
          }
          cpu::store_kv(l, values.data(), arena, block, pos % cache.block_size());
        }
      }
}

// The KV cache of a run: its format and bytes per token over all layers.
struct KvInfo {
  KvCacheDtype dtype;
  int64_t bytes_per_token;
};

// The dot-product peak of the kernels the weights' format runs on: int8
// for the quantized formats (activations are quantized to int8 blocks),
// bf16 for packed bf16 matrices (the AMX tiles' where they run them); 0 for
// the others. The quantized formats' AMX tiles do not count: their float
// step per block of 32 runs on the vector units beside them.
double format_peak_gmacs(ThreadPool& pool, const ModelWeights& w) {
  const WeightMatrix& m = w.layers.front().wq;
  if (m.dtype == DType::kF32 || m.dtype == DType::kF16) return 0;
  if (m.dtype == DType::kBF16) {
    if (m.packed == nullptr || !cpu::bf16_dot_supported()) return 0;
    return cpu::bf16_amx_tiles(m.cols) ? amx_bf16_peak_gmacs(pool) : bf16_peak_gmacs(pool);
  }
  return cpu::isa_supported(cpu::Isa::kAvx512) ? int8_peak_gmacs(pool) : 0;
}

// What one format's runs share: the model, its KV cache and one block table
// per sequence.
struct Run {
  Run(const Options& o, const std::string& format, LlamaModel& model, KvCache& cache, KvInfo kv)
      : o(o), format(format), model(model), cache(cache), kv(kv) {}

  const Options& o;
  const std::string& format;
  LlamaModel& model;
  KvCache& cache;
  KvInfo kv;
  std::vector<std::vector<int32_t>> tables;
  int64_t weight_bytes = 0, params = 0;  // params: multiply-adds per token
  ExpertTotals experts;                  // MoE: all experts, of which a token runs k per layer
  // The dot-product peak of the format's kernels (compute_probe.h), 1e9
  // multiply-adds per second; 0: not probed (f32, f16, no VNNI / BF16).
  double peak_gmacs = 0;
  bool block_peak = false;  // int8 formats: probe int8_block_loop per run
  DType block_dtype = DType::kQ8_0;  // whose block form (the first layer's wq)
  std::mt19937 rng{7};
  std::uniform_int_distribution<int32_t> token;
  zl::AlignedVector<float> logits;
};

// One phase's runs: seconds and CPU seconds each; for decode runs paired
// with a weight sweep, each run's sweep GB/s, bandwidth fraction (sweep time
// over step time) and roofline fraction (the larger of the sweep time and
// the time the step's multiply-adds take at peak_gmacs, compute_s, over the
// step time).
struct Measured {
  const char* phase;
  int batch = 1, tokens_per_run = 0;
  double compute_s = 0;  // 0: no compute ceiling
  // Per run: seconds, CPU seconds; with a sweep, its GB/s and the fractions;
  // int8 formats, the block probe's GMAC/s and the block roofline fraction.
  std::vector<double> seconds, cpu_seconds, sweep_gbs, bw_fractions, roofline_fractions, block_gmacs,
      block_fractions;
  // Decode of a MoE model: per run, the weight bytes one step streamed (the
  // dense matrices and the experts that had tokens) and experts run per
  // layer and step. Empty: every step streams all of weight_bytes.
  std::vector<double> step_bytes, experts_per_layer;
  // Decode: every timed step's seconds; per run, the roofline and block
  // fractions against the run's median step (a step in which the
  // hypervisor descheduled a vCPU, stalling the threads that wait for its
  // part, counts once, not in the mean), and the share of the machine's CPU
  // time stolen meanwhile (read_cpu_ticks).
  std::vector<double> step_seconds, step_fractions, block_step_fractions, steal_fractions;
};

// The bytes one forward pass of the measurement streams.
double bytes_per_pass(const Run& r, const Measured& m) {
  return m.step_bytes.empty() ? static_cast<double>(r.weight_bytes) : summarize(m.step_bytes).median;
}

// A decode line's per-step fields: tokens/s at the median step, the
// fractions against each run's median step, the stolen share.
std::string step_fields(const Measured& m) {
  if (m.step_seconds.empty()) return "";
  char out[320];
  int n = std::snprintf(out, sizeof out, ",\"tok_s_step_median\":%.2f", m.batch / summarize(m.step_seconds).median);
  auto add = [&](const char* name, const std::vector<double>& v) {
    if (v.empty()) return;
    const Summary sum = summarize(v);
    n += std::snprintf(out + n, sizeof out - static_cast<size_t>(n), ",\"%s\":%.3f,\"%s_max\":%.3f", name,
                       sum.median, name, sum.max);
  };
  add("roofline_fraction_step_median", m.step_fractions);
  add("block_roofline_fraction_step_median", m.block_step_fractions);
  add("steal_fraction", m.steal_fractions);
  return out;
}

// The bandwidth and roofline fields of a line.
std::string ceiling_fields(const Run& r, const Measured& m, double gbs) {
  char out[480] = "\"bandwidth_gbs\":null,\"bw_fraction\":null";  // prefill: bound by compute
  if (!m.bw_fractions.empty()) {
    const Summary bw = summarize(m.sweep_gbs), frac = summarize(m.bw_fractions);
    int n = std::snprintf(out, sizeof out,
                          "\"bandwidth_gbs\":%.2f,\"bandwidth_gbs_max\":%.2f,\"bw_fraction\":%.3f,"
                          "\"bw_fraction_min\":%.3f,\"bw_fraction_max\":%.3f",
                          bw.median, bw.max, frac.median, frac.min, frac.max);
    if (!m.roofline_fractions.empty()) {
      const Summary roof = summarize(m.roofline_fractions);
      const double sweep_s = bytes_per_pass(r, m) / (bw.median * 1e9);
      n += std::snprintf(out + n, sizeof out - static_cast<size_t>(n),
                         ",\"peak_gmacs\":%.1f,\"bound\":\"%s\",\"roofline_fraction\":%.3f,"
                         "\"roofline_fraction_min\":%.3f,\"roofline_fraction_max\":%.3f",
                         r.peak_gmacs, m.compute_s > sweep_s ? "compute" : "memory", roof.median, roof.min,
                         roof.max);
    }
    if (!m.block_fractions.empty()) {
      const Summary block = summarize(m.block_fractions);
      std::snprintf(out + n, sizeof out - static_cast<size_t>(n),
                    ",\"block_peak_gmacs\":%.1f,\"block_roofline_fraction\":%.3f,"
                    "\"block_roofline_fraction_min\":%.3f,\"block_roofline_fraction_max\":%.3f",
                    summarize(m.block_gmacs).median, block.median, block.min, block.max);
    }
  } else if (r.o.bandwidth_gbs > 0 && std::string(m.phase) == "decode") {
    std::snprintf(out, sizeof out, "\"bandwidth_gbs\":%.2f,\"bw_fraction\":%.3f", r.o.bandwidth_gbs,
                  gbs / r.o.bandwidth_gbs);
  }
  return out;
}

void print_line(const Run& r, const Measured& m) {
  const Options& o = r.o;
  std::vector<double> tok_s, cpu_tok_s;
  for (double s : m.seconds) tok_s.push_back(m.tokens_per_run / s);
  for (double s : m.cpu_seconds) cpu_tok_s.push_back(m.tokens_per_run / s);
  Summary s = summarize(tok_s);
  // Forward passes per second at the median, times the bytes each streams.
  double passes_per_s = std::string(m.phase) == "prefill" ? s.median / m.tokens_per_run : s.median / m.batch;
  double gbs = passes_per_s * bytes_per_pass(r, m) / 1e9;
  char moe[96] = "";
  if (!m.experts_per_layer.empty())
    std::snprintf(moe, sizeof moe, ",\"step_bytes\":%.0f,\"experts_per_layer\":%.2f", bytes_per_pass(r, m),
                  summarize(m.experts_per_layer).median);
  std::printf("{\"bench\":\"%s\",\"model\":\"%s\",\"format\":\"%s\",\"kv_dtype\":\"%s\","
              "\"kv_bytes_per_token\":%lld,\"context\":%d,\"isa\":\"%s\",\"threads\":%d,\"batch\":%d,"
              "\"tokens_per_run\":%d,\"runs\":%zu,\"tok_s_min\":%.2f,\"tok_s_median\":%.2f,\"tok_s_max\":%.2f,"
              "\"weight_bytes\":%lld%s,\"weight_gbs\":%.2f,%s%s,\"gflops\":%.1f,\"cpu_tok_s_median\":%.2f}\n",
              m.phase, o.model.c_str(), r.format.c_str(), kv_cache_dtype_name(r.kv.dtype),
              static_cast<long long>(r.kv.bytes_per_token), o.context, cpu::isa_name(cpu::active_isa()), o.threads,
              m.batch, m.tokens_per_run, m.seconds.size(), s.min, s.median, s.max,
              static_cast<long long>(r.weight_bytes), moe, gbs, ceiling_fields(r, m, gbs).c_str(),
              step_fields(m).c_str(), 2.0 * static_cast<double>(r.params) * s.median / 1e9,
              summarize(cpu_tok_s).median);
  std::fflush(stdout);
}

// One chunk of o.prompt tokens from position 0.
Status bench_prefill(Run& r) {
  const Options& o = r.o;
  std::vector<int32_t> prompt(static_cast<size_t>(o.prompt));
  for (int32_t& t : prompt) t = r.token(r.rng);
  Measured m{"prefill", 1, o.prompt, 0, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  for (int run = 0; run <= o.runs; ++run) {
    SeqChunk chunk{0, o.prompt, 0, r.tables[0]};
    int32_t last = o.prompt - 1;
    auto start = std::chrono::steady_clock::now();
    const double cpu_start = thread_cpu_seconds();
    ZL_RETURN_IF_ERROR(r.model.forward({prompt, {&chunk, 1}, {&last, 1}}, r.cache, r.logits.data()));
    if (run > 0) {  // run 0 warms up
      m.seconds.push_back(seconds_since(start));
      m.cpu_seconds.push_back(thread_cpu_seconds() - cpu_start);
    }
  }
  print_line(r, m);
  return ok_status();
}

// o.steps single-token steps of `batch` sequences from position `start_pos`
// (after 16-token prompts, or a filled context); returns seconds, each
// step's into *steps.
StatusOr<double> decode_steps(Run& r, int batch, int start_pos, std::vector<double>* steps) {
  std::vector<SeqChunk> chunks;
  std::vector<int32_t> rows;
  const auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < r.o.steps; ++step) {
    std::vector<int32_t> step_tokens(static_cast<size_t>(batch));
    for (int32_t& t : step_tokens) t = r.token(r.rng);
    chunks.clear();
    rows.clear();
    for (int s = 0; s < batch; ++s) {
      chunks.push_back({s, 1, start_pos + step, r.tables[static_cast<size_t>(s)]});
      rows.push_back(s);
    }
    const auto step_start = std::chrono::steady_clock::now();
    ZL_RETURN_IF_ERROR(r.model.forward({step_tokens, chunks, rows}, r.cache, r.logits.data()));
    steps->push_back(seconds_since(step_start));
  }
  return seconds_since(start);
}

Status bench_decode(Run& r, SpanSweep& floor, int batch) {
  const Options& o = r.o;
  const bool paired = o.bandwidth_gbs <= 0;
  // The step's multiply-adds at the format's dot-product peak.
  const double macs = batch * static_cast<double>(r.params);
  const double compute_s = r.peak_gmacs > 0 ? macs / (r.peak_gmacs * 1e9) : 0;
  Measured m{"decode", batch, batch * o.steps, compute_s, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
  for (int run = 0; run <= o.runs; ++run) {
    if (o.context == 0) {  // 16-token prompts for every sequence, untimed
      std::vector<int32_t> toks(static_cast<size_t>(batch) * 16);
      for (int32_t& t : toks) t = r.token(r.rng);
      std::vector<SeqChunk> chunks;
      std::vector<int32_t> rows;
      for (int s = 0; s < batch; ++s) {
        chunks.push_back({s * 16, 16, 0, r.tables[static_cast<size_t>(s)]});
        rows.push_back(s * 16 + 15);
      }
      ZL_RETURN_IF_ERROR(r.model.forward({toks, chunks, rows}, r.cache, r.logits.data()));
    }
    // The fastest of 3 sweeps: a time slice lost to another process makes
    // a sweep slower, and the floor should be what the memory can give now.
    const double sweep_s = paired ? std::min({floor.sweep(), floor.sweep(), floor.sweep()}) : 0;
    const double block_gmacs = paired && r.block_peak ? int8_block_peak_gmacs(r.model.pool(), r.block_dtype) : 0;
    const double cpu_start = thread_cpu_seconds();
    const int64_t expert_runs = r.model.moe_expert_runs();
    std::vector<double> steps;
    const CpuTicks ticks = read_cpu_ticks();
    ZL_ASSIGN_OR_RETURN(const double seconds, decode_steps(r, batch, o.context > 0 ? o.context : 16, &steps));
    if (run == 0) continue;  // warm-up
    const CpuTicks ticks_end = read_cpu_ticks();
    if (ticks.steal >= 0 && ticks_end.total > ticks.total)
      m.steal_fractions.push_back(static_cast<double>(ticks_end.steal - ticks.steal) /
                                  static_cast<double>(ticks_end.total - ticks.total));
    m.step_seconds.insert(m.step_seconds.end(), steps.begin(), steps.end());
    const double step_median = summarize(steps).median;
    m.seconds.push_back(seconds);
    m.cpu_seconds.push_back(thread_cpu_seconds() - cpu_start);
    // The share of the weights a step streamed: all of them, or for MoE the
    // dense matrices and each layer's experts that had tokens.
    double share = 1.0;
    if (r.experts.count > 0) {
      const double runs = static_cast<double>(r.model.moe_expert_runs() - expert_runs) / o.steps;
      const double bytes = static_cast<double>(r.weight_bytes - r.experts.bytes) +
                           runs * static_cast<double>(r.experts.bytes) / static_cast<double>(r.experts.count);
      share = bytes / static_cast<double>(r.weight_bytes);
      m.step_bytes.push_back(bytes);
      m.experts_per_layer.push_back(runs / static_cast<double>(r.model.config().num_layers));
    }
    if (paired) {
      m.bw_fractions.push_back(share * sweep_s / (seconds / o.steps));
      m.sweep_gbs.push_back(static_cast<double>(r.weight_bytes) / sweep_s / 1e9);
      if (compute_s > 0) {
        const double floor_s = std::max(share * sweep_s, compute_s);
        m.roofline_fractions.push_back(floor_s / (seconds / o.steps));
        m.step_fractions.push_back(floor_s / step_median);
      }
      if (block_gmacs > 0) {
        const double floor_s = std::max(share * sweep_s, macs / (block_gmacs * 1e9));
        m.block_gmacs.push_back(block_gmacs);
        m.block_fractions.push_back(floor_s / (seconds / o.steps));
        m.block_step_fractions.push_back(floor_s / step_median);
      }
    }
  }
  print_line(r, m);
  return ok_status();
}

Status bench_format(const Options& o, const std::string& format_name) {
  ZL_ASSIGN_OR_RETURN(WeightFormat format, parse_format(format_name));
  LoadOptions load;
  load.weight_format = format;
  ZL_ASSIGN_OR_RETURN(ModelSource source, open_model(o.model, load));
  ModelConfig& c = source.config;
  const int max_seqs = *std::max_element(o.batches.begin(), o.batches.end());
  const int max_batch = std::max({o.prompt, max_seqs * 16, 1});
  const int needed = std::max(o.prompt, std::max(o.context, 16) + o.steps) + 64;
  if (needed > c.max_seq_len)
    return invalid_argument("--context ", o.context, " exceeds the model's context of ", c.max_seq_len);
  c.max_seq_len = needed;
  ZL_ASSIGN_OR_RETURN(ModelWeights weights, load_model_weights(source));
  ZL_ASSIGN_OR_RETURN(KvCacheDtype kv_dtype, parse_kv_cache_dtype(o.kv_cache_dtype));
  if (kv_dtype == KvCacheDtype::kAuto) kv_dtype = default_kv_dtype(weights);
  ThreadPool pool(o.threads);
  LlamaModel model(c, weights, pool, max_batch);
  SpanSweep floor(pool, weight_spans(weights));
  if (o.bandwidth_gbs <= 0) floor.sweep();  // warm-up
  constexpr int32_t kBlockSize = 16;
  const int32_t blocks_per_seq = (c.max_seq_len + kBlockSize - 1) / kBlockSize;
  ZL_ASSIGN_OR_RETURN(auto cache, KvCache::create(c, blocks_per_seq * max_seqs, kBlockSize, 0, kv_dtype));
  Run r(o, format_name, model, *cache, {kv_dtype, KvCache::block_bytes(c, 1, c.num_layers, kv_dtype)});
  r.tables.resize(static_cast<size_t>(max_seqs));
  for (int s = 0; s < max_seqs; ++s)
    for (int b = 0; b < blocks_per_seq; ++b) r.tables[static_cast<size_t>(s)].push_back(s * blocks_per_seq + b);
  r.weight_bytes = floor.bytes();
  r.experts = expert_totals(weights);
  r.params = config_num_params(c) - (c.tie_word_embeddings ? 0 : int64_t{c.vocab_size} * c.dim);
  if (c.is_moe())  // a token runs experts_per_token of each layer's experts
    r.params -= r.experts.params / c.num_experts * (c.num_experts - c.experts_per_token);
  r.token = std::uniform_int_distribution<int32_t>(0, std::min(c.vocab_size, 256) - 1);
  r.logits.resize(static_cast<size_t>(max_batch) * c.vocab_size);
  r.peak_gmacs = format_peak_gmacs(pool, weights);
  r.block_dtype = weights.layers.front().wq.dtype;
  r.block_peak = cpu::dtype_is_quantized(r.block_dtype) && r.peak_gmacs > 0;
  if (o.context > 0) fill_context(*cache, c.num_layers, r.tables, o.context);
  if (o.prompt > 0) ZL_RETURN_IF_ERROR(bench_prefill(r));
  for (int batch : o.batches) ZL_RETURN_IF_ERROR(bench_decode(r, floor, batch));
  return ok_status();
}

}  // namespace
}  // namespace zl::bench

int main(int argc, char** argv) {
  zl::bench::Options o;
  CLI::App app{"Decode and prefill tokens/s per weight format, as JSON lines"};
  app.add_option("--model", o.model);
  app.add_option("--formats", o.formats,
                 "f32, f16, bf16, int8, q8_0, q4_0, q5_0, q5_1, q4_k, q6_k, or stored (as the file has it)")
      ->delimiter(',');
  app.add_option("--batches", o.batches)->delimiter(',');
  app.add_option("--threads", o.threads);
  app.add_option("--runs", o.runs)->check(CLI::Range(1, 100));
  app.add_option("--steps", o.steps)->check(CLI::Range(1, 4096));
  app.add_option("--prompt", o.prompt, "Prefill tokens (0: no prefill run)")->check(CLI::Range(0, 8192));
  app.add_option("--context", o.context, "Decode after this many positions of random KV (0: after 16-token prompts)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--kv-cache-dtype", o.kv_cache_dtype, "auto (as the engine: bf16 beside bf16 weights, else f16), "
                 "f32, f16, bf16, fp8 or q8_0");
  app.add_option("--bandwidth-gbs", o.bandwidth_gbs, "Read bandwidth in GB/s to state fractions against; 0 (default) times a read of the weights before each decode run");
  CLI11_PARSE(app, argc, argv);
  if (o.threads <= 0) o.threads = zl::default_num_threads();
  for (const std::string& f : o.formats) {
    zl::Status s = zl::bench::bench_format(o, f);
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s: %s\n", f.c_str(), s.message().c_str());
      return 1;
    }
  }
  return 0;
}
