// Decode speed of the CUDA forward pass, as JSON lines, with the device's
// copy bandwidth measured in the same run:
//   * bandwidth: a device-to-device copy (bytes read + written / time);
//   * for each --batches size B: B sequences prefilled with --context tokens,
//     then --steps decode steps of one token per sequence, three times:
//       - "engine": forward() per step as the engine calls it (metadata copy,
//         graph replay, logits copied back, wait), with the device time of
//         each step and the device's idle time before it from CUDA events;
//       - "greedy": the same, copying back only the device's argmax ids (the
//         engine's path when every request is plain greedy);
//       - "queued": enqueue() back to back, one wait at the end: the device's
//         own step time with the host out of the way.
//     ms_per_step is the median step time; each step yields B tokens, so at
//     batch 1 it is the ms per token. hbm_fraction = weight bytes streamed
//     per step / step time / measured copy bandwidth (KV reads not counted).
//
// Usage: gpu_bench --model dummy:llama-1b [--batches 1,8,64,256] [--context 128]
//                  [--steps 64] [--device 0] [--copy-mib 4096] [--batch-invariant] [--gemm-shapes]
//   * --gemm-shapes [--gemm-batches 1,2,4,8,64,256]: each GEMM of the model alone ("gpu_gemm" lines), to
//     split a step's time between streaming weights and everything else.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "bundle/model_loader.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/runtime.h"
#include "model/llama_cuda.h"

namespace zl::bench {
namespace {

// Tokens in one forward pass at most (prefill passes, GEMM shapes), the
// engine's default --max-num-batched-tokens.
constexpr int32_t kMaxBatchTokens = 2048;

struct Options {
  std::string model = "dummy:llama-1b";
  std::vector<int> batches = {1, 8, 64, 256};
  int context = 128, steps = 64, device = 0, copy_mib = 4096;
  bool batch_invariant = false;
  bool gemm_shapes = false;
  std::vector<int> gemm_batches = {1, 2, 4, 8, 64, 256};
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// B sequences with disjoint block tables long enough for context + steps.
struct Batch {
  std::vector<std::vector<int32_t>> tables;
};

Status prefill(CudaLlamaModel& model, const Batch& b, int32_t context, int32_t vocab, std::vector<float>& logits) {
  const int32_t num_seqs = static_cast<int32_t>(b.tables.size());
  const int32_t per_pass = std::max(1, kMaxBatchTokens / context);
  for (int32_t first = 0; first < num_seqs; first += per_pass) {
    std::vector<int32_t> tokens;
    std::vector<SeqChunk> chunks;
    std::vector<int32_t> rows;
    for (int32_t s = first; s < std::min(num_seqs, first + per_pass); ++s) {
      chunks.push_back({static_cast<int32_t>(tokens.size()), context, 0, b.tables[static_cast<size_t>(s)]});
      for (int32_t i = 0; i < context; ++i) tokens.push_back((s * 7919 + i * 104729) % vocab);
      rows.push_back(static_cast<int32_t>(tokens.size()) - 1);
    }
    ZL_RETURN_IF_ERROR(model.forward({tokens, chunks, rows}, logits.data()));
  }
  return ok_status();
}

Status run_batch(CudaLlamaModel& model, const ModelConfig& c, int32_t batch, const Options& o, int64_t weight_bytes,
                 double bandwidth_gbs) {
  const int32_t block_size = 16, blocks_per_seq = (o.context + o.steps + block_size) / block_size;
  Batch b;
  for (int32_t s = 0; s < batch; ++s) {
    b.tables.emplace_back(static_cast<size_t>(blocks_per_seq));
    std::iota(b.tables.back().begin(), b.tables.back().end(), s * blocks_per_seq);
  }
  std::vector<float> logits(static_cast<size_t>(std::max(batch, 8)) * c.vocab_size);
  ZL_RETURN_IF_ERROR(prefill(model, b, o.context, c.vocab_size, logits));

  std::vector<int32_t> tokens(static_cast<size_t>(batch));
  std::vector<SeqChunk> chunks(static_cast<size_t>(batch));
  std::vector<int32_t> rows(static_cast<size_t>(batch));
  std::iota(rows.begin(), rows.end(), 0);
  auto step_batch = [&](int32_t step) {
    for (int32_t s = 0; s < batch; ++s) {
      tokens[s] = (s * 31 + step * 17 + 1) % c.vocab_size;
      chunks[s] = {s, 1, o.context + step, b.tables[static_cast<size_t>(s)]};
    }
    return ForwardBatch{tokens, chunks, rows};
  };

  // As the engine drives it: wait for each step and its result; "engine"
  // copies every row's logits back (sampling on the host), "greedy" only the
  // device's argmax ids (the engine's path when every row is plain greedy).
  struct Loop {
    double wall_ms, gpu_ms, idle_ms;
  };
  std::vector<int32_t> greedy(static_cast<size_t>(batch));
  auto engine_loop = [&](bool greedy_only, Loop& out) -> Status {
    std::vector<double> wall, gpu, idle;
    for (int32_t step = 0; step < o.steps; ++step) {
      auto start = std::chrono::steady_clock::now();
      ZL_RETURN_IF_ERROR(model.forward(step_batch(step), logits.data(), greedy.data(), greedy_only));
      if (step < 2) continue;  // the bucket's first step runs eagerly and captures the graph
      wall.push_back(ms_since(start));
      CudaLlamaModel::StepTiming t = model.last_step_timing();
      gpu.push_back(t.gpu_ms);
      if (t.idle_before_ms >= 0) idle.push_back(t.idle_before_ms);
    }
    out = {median(wall), median(gpu), median(idle)};
    return ok_status();
  };
  Loop with_logits{}, greedy_ids{};
  ZL_RETURN_IF_ERROR(engine_loop(false, with_logits));
  ZL_RETURN_IF_ERROR(engine_loop(true, greedy_ids));
  // Back to back, over the same positions.
  auto start = std::chrono::steady_clock::now();
  for (int32_t step = 0; step < o.steps; ++step) ZL_RETURN_IF_ERROR(model.enqueue(step_batch(step)));
  ZL_RETURN_IF_ERROR(model.synchronize());
  const double queued_ms = ms_since(start) / o.steps;

  auto fraction = [&](double ms) { return static_cast<double>(weight_bytes) / (ms * 1e-3) / (bandwidth_gbs * 1e9); };
  std::printf(
      "{\"bench\":\"gpu_decode\",\"model\":\"%s\",\"batch_invariant\":%s,\"batch\":%d,\"context\":%d,\"steps\":%d,"
      "\"engine_ms_per_step\":%.4f,\"engine_gpu_ms_per_step\":%.4f,\"gpu_idle_between_steps_ms\":%.4f,"
      "\"greedy_ms_per_step\":%.4f,\"greedy_gpu_ms_per_step\":%.4f,\"greedy_gpu_idle_between_steps_ms\":%.4f,"
      "\"queued_ms_per_step\":%.4f,\"tokens_per_s_engine\":%.1f,\"tokens_per_s_greedy\":%.1f,"
      "\"tokens_per_s_queued\":%.1f,\"hbm_fraction_engine\":%.3f,\"hbm_fraction_greedy\":%.3f,"
      "\"hbm_fraction_queued\":%.3f}\n",
      o.model.c_str(), o.batch_invariant ? "true" : "false", batch, o.context, o.steps, with_logits.wall_ms,
      with_logits.gpu_ms, with_logits.idle_ms, greedy_ids.wall_ms, greedy_ids.gpu_ms, greedy_ids.idle_ms, queued_ms,
      batch / (with_logits.wall_ms * 1e-3), batch / (greedy_ids.wall_ms * 1e-3), batch / (queued_ms * 1e-3),
      fraction(with_logits.wall_ms), fraction(greedy_ids.wall_ms), fraction(queued_ms));
  std::fflush(stdout);
  return ok_status();
}

// Each of the model's GEMM shapes alone at each batch size (cuBLASLt as the
// forward pass calls it): where a decode step's time goes between the
// weights' streaming and everything else. Weights rotate over copies
// totalling > 256 MiB so the 60 MB L2 cannot hold them between runs.
Status gemm_shapes(const ModelConfig& c, const Options& o, double bandwidth_gbs) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> shapes[] = {
      {"qkv", {c.q_dim() + 2 * c.kv_dim(), c.dim}}, {"wo", {c.dim, c.q_dim()}},
      {"gate_up", {2 * int64_t{c.hidden_dim}, c.dim}}, {"down", {c.dim, c.hidden_dim}},
      {"lm_head", {c.vocab_size, c.dim}}};
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<cuda::Gemm> gemm, cuda::Gemm::create(size_t{32} << 20, o.batch_invariant ? kMaxBatchTokens : 0));
  const int32_t max_batch = *std::max_element(o.gemm_batches.begin(), o.gemm_batches.end());
  for (const auto& [name, shape] : shapes) {
    const auto [n, k] = shape;
    const size_t weight_bytes = static_cast<size_t>(n * k * 2);
    const size_t copies = std::max<size_t>(1, ((size_t{256} << 20) + weight_bytes - 1) / weight_bytes);
    ZL_ASSIGN_OR_RETURN(cuda::DeviceBuffer w, cuda::DeviceBuffer::allocate(weight_bytes * copies));
    ZL_ASSIGN_OR_RETURN(cuda::DeviceBuffer x, cuda::DeviceBuffer::allocate(static_cast<size_t>(max_batch * k * 2)));
    ZL_ASSIGN_OR_RETURN(cuda::DeviceBuffer y, cuda::DeviceBuffer::allocate(static_cast<size_t>(max_batch * n * 4)));
    std::vector<uint16_t> ones(std::max<size_t>(weight_bytes * copies, static_cast<size_t>(max_batch * k * 2)) / 2, 0x3c00);
    ZL_RETURN_IF_ERROR(cuda::copy_to_device(w.data(), ones.data(), weight_bytes * copies));  // bf16 1/128: not zeros
    ZL_RETURN_IF_ERROR(cuda::copy_to_device(x.data(), ones.data(), static_cast<size_t>(max_batch * k * 2)));
    for (int32_t batch : o.gemm_batches) {
      size_t next = 0;
      auto work = [&] {
        const cuda::Bf16* wc = w.as<cuda::Bf16>() + (next++ % copies) * static_cast<size_t>(n * k);
        return gemm->run(x.as<cuda::Bf16>(), wc, y.as<float>(), batch, n, k, nullptr);
      };
      ZL_ASSIGN_OR_RETURN(double ms, cuda::median_device_ms(work, 50));
      const double gbs = static_cast<double>(weight_bytes) / (ms * 1e-3) / 1e9;
      std::printf("{\"bench\":\"gpu_gemm\",\"batch_invariant\":%s,\"shape\":\"%s\",\"n\":%lld,\"k\":%lld,"
                  "\"tokens\":%d,\"ms\":%.4f,\"weight_gbs\":%.1f,\"hbm_fraction\":%.3f}\n",
                  o.batch_invariant ? "true" : "false", name, static_cast<long long>(n), static_cast<long long>(k),
                  batch, ms, gbs, gbs / bandwidth_gbs);
    }
  }
  std::fflush(stdout);
  return ok_status();
}

Status run(const Options& o) {
  ZL_ASSIGN_OR_RETURN(cuda::DeviceProps props, cuda::open_device(o.device));
  ZL_ASSIGN_OR_RETURN(double gbs, cuda::copy_bandwidth_gbps(static_cast<size_t>(o.copy_mib) << 20, 20));
  std::printf("{\"bench\":\"gpu_copy_bandwidth\",\"device\":\"%s\",\"sms\":%d,\"bytes\":%lld,\"gbs_median\":%.1f}\n",
              props.name.c_str(), props.sm_count, static_cast<long long>(o.copy_mib) << 20, gbs);
  LoadOptions load;
  load.weight_format.convert_dtype = true;
  load.weight_format.dtype = DType::kBF16;
  ZL_ASSIGN_OR_RETURN(ModelSource source, open_model(o.model, load));
  ModelConfig& c = source.config;
  c.max_seq_len = std::min(c.max_seq_len, o.context + o.steps + 16);
  ZL_ASSIGN_OR_RETURN(ModelWeights weights, load_model_weights(source));
  const int32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  CudaModelOptions options;
  options.device_index = o.device;
  options.max_batch_tokens = kMaxBatchTokens;
  options.max_num_seqs = max_batch;
  options.block_size = 16;
  options.batch_invariant = o.batch_invariant;
  options.kv_cache_bytes = int64_t{max_batch} * ((o.context + o.steps + 16) / 16) * 2 * c.num_layers * 16 * c.kv_dim() * 2;
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<CudaLlamaModel> model, CudaLlamaModel::create(c, weights, options));
  std::fprintf(stderr, "%s\n", model->description().c_str());
  for (int batch : o.batches) ZL_RETURN_IF_ERROR(run_batch(*model, c, batch, o, weights.matrix_bytes(), gbs));
  return o.gemm_shapes ? gemm_shapes(c, o, gbs) : ok_status();
}

}  // namespace
}  // namespace zl::bench

int main(int argc, char** argv) {
  zl::bench::Options o;
  CLI::App app{"CUDA decode benchmark"};
  app.add_option("--model", o.model);
  app.add_option("--batches", o.batches)->delimiter(',');
  app.add_option("--context", o.context)->check(CLI::Range(1, 1 << 16));
  app.add_option("--steps", o.steps)->check(CLI::Range(4, 1 << 16));
  app.add_option("--device", o.device)->check(CLI::Range(0, 1023));
  app.add_option("--copy-mib", o.copy_mib)->check(CLI::Range(1, 1 << 16));
  app.add_flag("--batch-invariant", o.batch_invariant, "CudaModelOptions::batch_invariant");
  app.add_flag("--gemm-shapes", o.gemm_shapes, "Also time each GEMM shape alone at each --gemm-batches size");
  app.add_option("--gemm-batches", o.gemm_batches)->delimiter(',')->check(CLI::Range(1, zl::bench::kMaxBatchTokens));
  CLI11_PARSE(app, argc, argv);
  for (int b : o.batches)
    if (b < 1 || b > 256) return std::fprintf(stderr, "error: --batches entries must be in [1, 256]\n"), 2;
  zl::Status status = zl::bench::run(o);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
