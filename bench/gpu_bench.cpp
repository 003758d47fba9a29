// Decode speed of the CUDA forward pass, as JSON lines, with the device's
// copy bandwidth measured in the same run:
//   * bandwidth: a device-to-device copy (bytes read + written / time);
//   * for each --batches size B: B sequences prefilled with --context tokens,
//     then --steps decode steps of one token per sequence, twice:
//       - "engine": forward() per step as the engine calls it (metadata copy,
//         graph replay, logits copied back, wait), with the device time of
//         each step and the device's idle time before it from CUDA events;
//       - "queued": enqueue() back to back, one wait at the end: the device's
//         own step time with the host out of the way.
//     ms_per_step is the median step time; each step yields B tokens, so at
//     batch 1 it is the ms per token. hbm_fraction = weight bytes streamed
//     per step / step time / measured copy bandwidth (KV reads not counted).
//
// Usage: gpu_bench --model dummy:llama-1b [--batches 1,8,64,256] [--context 128]
//                  [--steps 64] [--device 0] [--copy-mib 4096]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "kernels/cuda/runtime.h"
#include "model/llama_cuda.h"
#include "model/model_loader.h"

namespace zl::bench {
namespace {

struct Options {
  std::string model = "dummy:llama-1b";
  std::vector<int> batches = {1, 8, 64, 256};
  int context = 128, steps = 64, device = 0, copy_mib = 4096;
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
  const int32_t per_pass = std::max(1, 2048 / context);
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

  // As the engine drives it: wait for each step and its logits.
  std::vector<double> wall, gpu, idle;
  for (int32_t step = 0; step < o.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    ZL_RETURN_IF_ERROR(model.forward(step_batch(step), logits.data()));
    if (step < 2) continue;  // the bucket's first step runs eagerly and captures the graph
    wall.push_back(ms_since(start));
    CudaLlamaModel::StepTiming t = model.last_step_timing();
    gpu.push_back(t.gpu_ms);
    if (t.idle_before_ms >= 0) idle.push_back(t.idle_before_ms);
  }
  // Back to back, over the same positions.
  auto start = std::chrono::steady_clock::now();
  for (int32_t step = 0; step < o.steps; ++step) ZL_RETURN_IF_ERROR(model.enqueue(step_batch(step)));
  ZL_RETURN_IF_ERROR(model.synchronize());
  const double queued_ms = ms_since(start) / o.steps;

  const double engine_ms = median(wall);
  auto fraction = [&](double ms) { return static_cast<double>(weight_bytes) / (ms * 1e-3) / (bandwidth_gbs * 1e9); };
  std::printf(
      "{\"bench\":\"gpu_decode\",\"model\":\"%s\",\"batch\":%d,\"context\":%d,\"steps\":%d,"
      "\"engine_ms_per_step\":%.4f,\"engine_gpu_ms_per_step\":%.4f,\"gpu_idle_between_steps_ms\":%.4f,"
      "\"queued_ms_per_step\":%.4f,\"tokens_per_s_engine\":%.1f,\"tokens_per_s_queued\":%.1f,"
      "\"hbm_fraction_engine\":%.3f,\"hbm_fraction_queued\":%.3f}\n",
      o.model.c_str(), batch, o.context, o.steps, engine_ms, median(gpu), median(idle), queued_ms,
      batch / (engine_ms * 1e-3), batch / (queued_ms * 1e-3), fraction(engine_ms), fraction(queued_ms));
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
  options.max_batch_tokens = 2048;
  options.max_num_seqs = max_batch;
  options.block_size = 16;
  options.kv_cache_bytes = int64_t{max_batch} * ((o.context + o.steps + 16) / 16) * 2 * c.num_layers * 16 * c.kv_dim() * 2;
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<CudaLlamaModel> model, CudaLlamaModel::create(c, weights, options));
  std::fprintf(stderr, "%s\n", model->description().c_str());
  for (int batch : o.batches) ZL_RETURN_IF_ERROR(run_batch(*model, c, batch, o, weights.matrix_bytes(), gbs));
  return ok_status();
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
