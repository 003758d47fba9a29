#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "core/check.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/rmsnorm.h"
#include "kernels/cuda/rope.h"
#include "kernels/cuda/sampling.h"
#include "model/cuda_plan.h"
#include "model/llama_cuda.h"

namespace zl {
namespace {

using cuda::Bf16;
using cuda::DeviceBuffer;

// Stacks the rows of `parts` (same cols) as one bf16 matrix on the device.
StatusOr<DeviceBuffer> upload_bf16(std::initializer_list<const WeightMatrix*> parts) {
  int64_t rows = 0, cols = (*parts.begin())->cols;
  for (const WeightMatrix* w : parts) rows += w->rows;
  std::vector<Bf16> host(static_cast<size_t>(rows * cols));
  std::vector<float> row(static_cast<size_t>(cols));
  int64_t at = 0;
  for (const WeightMatrix* w : parts) {
    for (int64_t r = 0; r < w->rows; ++r, ++at) {
      w->row_to_f32(r, row.data());
      for (int64_t c = 0; c < cols; ++c) host[static_cast<size_t>(at * cols + c)] = f32_to_bf16(row[static_cast<size_t>(c)]);
    }
  }
  ZL_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(host.size() * sizeof(Bf16)));
  ZL_RETURN_IF_ERROR(cuda::copy_to_device(buffer.data(), host.data(), host.size() * sizeof(Bf16)));
  ZL_RETURN_IF_ERROR(cuda::synchronize());
  return StatusOr<DeviceBuffer>(std::move(buffer));  // nvcc does not move a local into a converting return
}

StatusOr<DeviceBuffer> upload_f32(const float* data, int64_t n) {
  ZL_ASSIGN_OR_RETURN(DeviceBuffer buffer, DeviceBuffer::allocate(static_cast<size_t>(n) * sizeof(float)));
  ZL_RETURN_IF_ERROR(cuda::copy_to_device(buffer.data(), data, static_cast<size_t>(n) * sizeof(float)));
  ZL_RETURN_IF_ERROR(cuda::synchronize());
  return StatusOr<DeviceBuffer>(std::move(buffer));  // nvcc does not move a local into a converting return
}

struct LayerBuffers {
  DeviceBuffer attn_norm, ffn_norm;  // [dim] f32
  DeviceBuffer wqkv;                 // [q_dim + 2 kv_dim, dim] bf16
  DeviceBuffer bqkv;                 // [q_dim + 2 kv_dim] f32, only with qkv_bias
  DeviceBuffer wo;                   // [dim, q_dim]
  DeviceBuffer w_gate_up;            // [2 hidden, dim]
  DeviceBuffer w_down;               // [dim, hidden]
};

}  // namespace

struct CudaLlamaModel::Impl {
  ModelConfig c;
  CudaModelOptions options;
  cuda::DeviceProps props;
  cuda::Stream stream = nullptr;
  std::unique_ptr<cuda::Gemm> gemm;
  int64_t weight_bytes = 0;

  DeviceBuffer embeddings, lm_head, final_norm, inv_freq;  // lm_head empty when tied
  std::vector<LayerBuffers> layers;
  int32_t num_blocks = 0;
  DeviceBuffer k_cache, v_cache;  // [num_layers, num_blocks * block_size, kv_dim] bf16

  // Activations for T = max_batch_tokens tokens and R = max_rows logit rows.
  int32_t max_rows = 0, max_seqs = 0;
  DeviceBuffer x;           // [T, dim] f32 residual stream
  DeviceBuffer xb;          // [T, dim] bf16 normalised input of a block
  DeviceBuffer qkv;         // [T, q_dim + 2 kv_dim] f32
  DeviceBuffer att;         // [T, q_dim] bf16
  DeviceBuffer proj;        // [T, dim] f32 output of wo / w_down
  DeviceBuffer gate_up;     // [T, 2 hidden] f32
  DeviceBuffer hidden;      // [T, hidden] bf16
  DeviceBuffer logits;      // [R, vocab] f32
  DeviceBuffer greedy;      // [R] int32: each logits row's argmax
  DeviceBuffer split_ws;    // attention partials, [max_seqs, heads, kMaxSplits, head_dim + 2]
  DeviceBuffer meta;        // the packed step (model/cuda_plan.h)
  cuda::PinnedBuffer logits_host;
  cuda::PinnedBuffer greedy_host;  // [R] int32
  // Packed on the host in pageable memory: the copy stages it at once, so the
  // next step may be packed while this one is still queued.
  std::vector<int32_t> packed;
  // [2] start/end of the step, ping-ponged so the previous end survives.
  cudaEvent_t step_start[2] = {}, step_end[2] = {};
  int32_t step_parity = 0;
  bool have_previous_step = false;
  CudaLlamaModel::StepTiming timing;

  std::map<int32_t, cudaGraphExec_t> graphs;  // decode bucket -> replayable step

  static constexpr int32_t kMaxSplits = 16;

  ~Impl() {
    for (auto& [bucket, exec] : graphs) cudaGraphExecDestroy(exec);
    for (int i = 0; i < 2; ++i) {
      if (step_start[i]) cudaEventDestroy(step_start[i]);
      if (step_end[i]) cudaEventDestroy(step_end[i]);
    }
    cuda::destroy_stream(stream);
  }

  Status upload(const ModelWeights& w);
  Status allocate_buffers();
  Status run_step(const StepLayout& l, int32_t num_tokens, int32_t max_tokens_per_seq, int32_t num_splits);
  Status run_decode_graph(const StepLayout& l, int32_t bucket);
  Status enqueue(const ForwardBatch& batch);
  int64_t kv_layer_elems() const { return int64_t{num_blocks} * options.block_size * c.kv_dim(); }
};

Status CudaLlamaModel::Impl::upload(const ModelWeights& w) {
  ZL_ASSIGN_OR_RETURN(embeddings, upload_bf16({&w.tok_embeddings}));
  if (!c.tie_word_embeddings) {
    ZL_ASSIGN_OR_RETURN(lm_head, upload_bf16({&w.lm_head}));
  }
  ZL_ASSIGN_OR_RETURN(final_norm, upload_f32(w.final_norm, c.dim));
  std::vector<float> freq = rope_inv_freq(c);
  ZL_ASSIGN_OR_RETURN(inv_freq, upload_f32(freq.data(), static_cast<int64_t>(freq.size())));
  for (const LayerWeights& lw : w.layers) {
    LayerBuffers lb;
    ZL_ASSIGN_OR_RETURN(lb.attn_norm, upload_f32(lw.attn_norm, c.dim));
    ZL_ASSIGN_OR_RETURN(lb.ffn_norm, upload_f32(lw.ffn_norm, c.dim));
    ZL_ASSIGN_OR_RETURN(lb.wqkv, upload_bf16({&lw.wq, &lw.wk, &lw.wv}));
    if (lw.bq) {
      std::vector<float> bias(lw.bq, lw.bq + c.q_dim());
      bias.insert(bias.end(), lw.bk, lw.bk + c.kv_dim());
      bias.insert(bias.end(), lw.bv, lw.bv + c.kv_dim());
      ZL_ASSIGN_OR_RETURN(lb.bqkv, upload_f32(bias.data(), static_cast<int64_t>(bias.size())));
    }
    ZL_ASSIGN_OR_RETURN(lb.wo, upload_bf16({&lw.wo}));
    ZL_ASSIGN_OR_RETURN(lb.w_gate_up, upload_bf16({&lw.w_gate, &lw.w_up}));
    ZL_ASSIGN_OR_RETURN(lb.w_down, upload_bf16({&lw.w_down}));
    weight_bytes += static_cast<int64_t>(lb.wqkv.num_bytes() + lb.wo.num_bytes() + lb.w_gate_up.num_bytes() +
                                         lb.w_down.num_bytes());
    layers.push_back(std::move(lb));
  }
  weight_bytes += static_cast<int64_t>(embeddings.num_bytes() + lm_head.num_bytes());
  return ok_status();
}

Status CudaLlamaModel::Impl::allocate_buffers() {
  const size_t t = static_cast<size_t>(options.max_batch_tokens);
  max_seqs = std::max(options.max_num_seqs, kMaxDecodeGraphBatch);
  max_rows = static_cast<int32_t>(std::min<size_t>(t, static_cast<size_t>(max_seqs)));
  max_rows = std::max(max_rows, kMaxDecodeGraphBatch);  // a padded decode bucket has 256 rows
  const size_t qkv_dim = static_cast<size_t>(c.q_dim() + 2 * c.kv_dim());
  auto alloc = [](DeviceBuffer& b, size_t bytes) -> Status {
    ZL_ASSIGN_OR_RETURN(b, DeviceBuffer::allocate(bytes));
    return ok_status();
  };
  const size_t tokens = std::max(t, static_cast<size_t>(kMaxDecodeGraphBatch));
  ZL_RETURN_IF_ERROR(alloc(x, tokens * c.dim * 4));
  ZL_RETURN_IF_ERROR(alloc(xb, tokens * c.dim * 2));
  ZL_RETURN_IF_ERROR(alloc(qkv, tokens * qkv_dim * 4));
  ZL_RETURN_IF_ERROR(alloc(att, tokens * c.q_dim() * 2));
  ZL_RETURN_IF_ERROR(alloc(proj, tokens * c.dim * 4));
  ZL_RETURN_IF_ERROR(alloc(gate_up, tokens * 2 * c.hidden_dim * 4));
  ZL_RETURN_IF_ERROR(alloc(hidden, tokens * c.hidden_dim * 2));
  ZL_RETURN_IF_ERROR(alloc(logits, static_cast<size_t>(max_rows) * c.vocab_size * 4));
  ZL_RETURN_IF_ERROR(alloc(greedy, static_cast<size_t>(max_rows) * 4));
  ZL_RETURN_IF_ERROR(alloc(split_ws, static_cast<size_t>(cuda::attention_split_workspace_floats(
                                         max_seqs, c.num_heads, kMaxSplits, c.head_dim)) * 4));
  const int64_t blocks_per_seq = (c.max_seq_len + options.block_size - 1) / options.block_size;
  const StepLayout widest = step_layout(static_cast<int32_t>(tokens), max_seqs, max_rows);
  const size_t meta_words = static_cast<size_t>(widest.block_tables + max_seqs * blocks_per_seq);
  ZL_RETURN_IF_ERROR(alloc(meta, meta_words * 4));
  for (int i = 0; i < 2; ++i) {
    ZL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_start[i]));
    ZL_CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_end[i]));
  }
  ZL_ASSIGN_OR_RETURN(logits_host, cuda::PinnedBuffer::allocate(static_cast<size_t>(max_rows) * c.vocab_size * 4));
  ZL_ASSIGN_OR_RETURN(greedy_host, cuda::PinnedBuffer::allocate(static_cast<size_t>(max_rows) * 4));
  packed.reserve(meta_words);
  return ok_status();
}

// The whole forward pass for a packed step already on the device.
// num_splits == 0: prefill attention (any chunks); else split-K decode.
Status CudaLlamaModel::Impl::run_step(const StepLayout& l, int32_t num_tokens, int32_t max_tokens_per_seq,
                                      int32_t num_splits) {
  const int32_t* m = meta.as<int32_t>();
  const int64_t qkv_dim = c.q_dim() + 2 * c.kv_dim();
  const float eps = c.rms_norm_eps;
  cuda::embedding(m + l.tokens, embeddings.as<Bf16>(), x.as<float>(), num_tokens, c.dim, stream);
  for (int32_t layer = 0; layer < c.num_layers; ++layer) {
    const LayerBuffers& w = layers[static_cast<size_t>(layer)];
    // The previous MLP's output joins the residual stream as this block is normalised.
    cuda::add_rmsnorm(x.as<float>(), layer == 0 ? nullptr : proj.as<float>(), w.attn_norm.as<float>(),
                      xb.as<Bf16>(), nullptr, num_tokens, c.dim, eps, stream);
    ZL_RETURN_IF_ERROR(gemm->run(xb.as<Bf16>(), w.wqkv.as<Bf16>(), qkv.as<float>(), num_tokens, qkv_dim, c.dim, stream));
    cuda::RopeKvArgs r;
    r.qkv = qkv.as<float>();
    r.bias = w.bqkv.as<float>();
    r.positions = m + l.positions;
    r.slots = m + l.slots;
    r.inv_freq = inv_freq.as<float>();
    r.k_cache = k_cache.as<Bf16>() + layer * kv_layer_elems();
    r.v_cache = v_cache.as<Bf16>() + layer * kv_layer_elems();
    r.num_tokens = num_tokens;
    r.num_heads = c.num_heads;
    r.num_kv_heads = c.num_kv_heads;
    r.head_dim = c.head_dim;
    r.interleaved = c.rope_interleaved;
    cuda::rope_store_kv(r, stream);

    cuda::AttentionArgs a;
    a.q = qkv.as<float>();
    a.q_stride = qkv_dim;
    a.out = att.as<Bf16>();
    a.k_cache = r.k_cache;
    a.v_cache = r.v_cache;
    a.seq_token_begin = m + l.seq_token_begin;
    a.seq_num_tokens = m + l.seq_num_tokens;
    a.seq_start_pos = m + l.seq_start_pos;
    a.table_begin = m + l.table_begin;
    a.block_tables = m + l.block_tables;
    a.num_seqs = l.num_seqs;
    a.num_heads = c.num_heads;
    a.num_kv_heads = c.num_kv_heads;
    a.head_dim = c.head_dim;
    a.block_size = options.block_size;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    a.split_workspace = split_ws.as<float>();
    ZL_RETURN_IF_ERROR(num_splits == 0 ? cuda::attention_prefill(a, max_tokens_per_seq, stream)
                                       : cuda::attention_decode(a, num_splits, stream));
    ZL_RETURN_IF_ERROR(gemm->run(att.as<Bf16>(), w.wo.as<Bf16>(), proj.as<float>(), num_tokens, c.dim, c.q_dim(), stream));
    cuda::add_rmsnorm(x.as<float>(), proj.as<float>(), w.ffn_norm.as<float>(), xb.as<Bf16>(), nullptr, num_tokens,
                      c.dim, eps, stream);
    ZL_RETURN_IF_ERROR(gemm->run(xb.as<Bf16>(), w.w_gate_up.as<Bf16>(), gate_up.as<float>(), num_tokens,
                                 2 * int64_t{c.hidden_dim}, c.dim, stream));
    cuda::swiglu(gate_up.as<float>(), hidden.as<Bf16>(), num_tokens, c.hidden_dim, stream);
    ZL_RETURN_IF_ERROR(gemm->run(hidden.as<Bf16>(), w.w_down.as<Bf16>(), proj.as<float>(), num_tokens, c.dim,
                                 c.hidden_dim, stream));
  }
  // Last residual add (its norm output is unused), then the final norm of the logit rows only.
  cuda::add_rmsnorm(x.as<float>(), proj.as<float>(), final_norm.as<float>(), xb.as<Bf16>(), nullptr, num_tokens, c.dim,
                    eps, stream);
  cuda::add_rmsnorm(x.as<float>(), nullptr, final_norm.as<float>(), xb.as<Bf16>(), m + l.logit_rows, l.num_logit_rows,
                    c.dim, eps, stream);
  const Bf16* head = c.tie_word_embeddings ? embeddings.as<Bf16>() : lm_head.as<Bf16>();
  ZL_RETURN_IF_ERROR(gemm->run(xb.as<Bf16>(), head, logits.as<float>(), l.num_logit_rows, c.vocab_size, c.dim, stream));
  cuda::argmax_rows(logits.as<float>(), l.num_logit_rows, c.vocab_size, greedy.as<int32_t>(), stream);
  return cuda::check_launch("forward step");
}

Status CudaLlamaModel::Impl::run_decode_graph(const StepLayout& l, int32_t bucket) {
  // Batch-invariant: decode through the prefill kernel (splits 0), whose
  // order over the keys is the same whichever way a token is scheduled.
  const int32_t splits = options.batch_invariant
                             ? 0
                             : decode_num_splits(bucket, c.num_kv_heads, c.num_heads / c.num_kv_heads,
                                                 cuda::kAttentionRowsPerBlock, props.sm_count);
  auto it = graphs.find(bucket);
  if (it != graphs.end()) {
    ZL_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(it->second, stream));
    return ok_status();
  }
  // First step of this bucket: run it (makes the cuBLASLt plans, raises
  // kernel attributes), then capture the same work for the next ones.
  ZL_RETURN_IF_ERROR(run_step(l, bucket, 1, splits));
  cudaGraph_t graph = nullptr;
  ZL_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  Status captured = run_step(l, bucket, 1, splits);
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  ZL_RETURN_IF_ERROR(captured);
  ZL_CUDA_RETURN_IF_ERROR(ended);
  cudaGraphExec_t exec = nullptr;
  cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  ZL_CUDA_RETURN_IF_ERROR(made);
  graphs.emplace(bucket, exec);
  return ok_status();
}

CudaLlamaModel::CudaLlamaModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaLlamaModel::~CudaLlamaModel() = default;

StatusOr<std::unique_ptr<CudaLlamaModel>> CudaLlamaModel::create(const ModelConfig& config, const ModelWeights& weights,
                                                                 const CudaModelOptions& options) {
  ZL_RETURN_IF_ERROR(cuda_supports(config));
  if (config.head_dim > cuda::kAttentionMaxHeadDim || config.head_dim % 2 != 0)
    return unimplemented("the CUDA backend supports even head_dim up to ", cuda::kAttentionMaxHeadDim, ", the model has ",
                         config.head_dim);
  auto impl = std::make_unique<Impl>();
  impl->c = config;
  impl->options = options;
  ZL_ASSIGN_OR_RETURN(impl->props, cuda::open_device(options.device_index));
  ZL_ASSIGN_OR_RETURN(impl->stream, cuda::create_stream());
  const int64_t invariant_tokens =
      options.batch_invariant ? std::max<int64_t>(options.max_batch_tokens, kMaxDecodeGraphBatch) : 0;
  ZL_ASSIGN_OR_RETURN(impl->gemm, cuda::Gemm::create(size_t{32} << 20, invariant_tokens));
  ZL_RETURN_IF_ERROR(impl->upload(weights));
  ZL_RETURN_IF_ERROR(impl->allocate_buffers());

  // KV pool: what is asked for (or a fraction of what is left), no more than
  // max_num_seqs full-length sequences need.
  size_t free_bytes = 0, total_bytes = 0;
  ZL_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  const int64_t bytes_per_block = int64_t{2} * config.num_layers * options.block_size * config.kv_dim() * 2;
  const int64_t budget = options.kv_cache_bytes > 0 ? options.kv_cache_bytes
                                                    : static_cast<int64_t>(options.kv_cache_fraction * free_bytes);
  const int64_t blocks_per_seq = (config.max_seq_len + options.block_size - 1) / options.block_size;
  int64_t blocks = std::min<int64_t>(budget / bytes_per_block, blocks_per_seq * options.max_num_seqs);
  blocks = std::min<int64_t>(blocks, INT32_MAX / options.block_size);
  if (blocks < 1)
    return resource_exhausted("the device KV budget of ", budget, " bytes holds no block of ", bytes_per_block, " bytes");
  impl->num_blocks = static_cast<int32_t>(blocks);
  const size_t kv_bytes = static_cast<size_t>(impl->kv_layer_elems() * config.num_layers * 2);
  ZL_ASSIGN_OR_RETURN(impl->k_cache, DeviceBuffer::allocate(kv_bytes));
  ZL_ASSIGN_OR_RETURN(impl->v_cache, DeviceBuffer::allocate(kv_bytes));
  return std::unique_ptr<CudaLlamaModel>(new CudaLlamaModel(std::move(impl)));
}

int32_t CudaLlamaModel::num_kv_blocks() const { return impl_->num_blocks; }

std::string CudaLlamaModel::description() const {
  const Impl& m = *impl_;
  return str_cat("cuda:", m.options.device_index, " ", m.props.name, " (", m.props.sm_count, " SMs), weights ",
                 m.weight_bytes >> 20, " MiB bf16, KV pool ", m.num_blocks, " blocks of ", m.options.block_size,
                 " tokens (", (m.k_cache.num_bytes() + m.v_cache.num_bytes()) >> 20, " MiB), decode graphs ",
                 m.options.use_graphs ? "on" : "off");
}

// Packs and copies the step's metadata, then runs the step (graph or eager),
// between the step's two events.
Status CudaLlamaModel::Impl::enqueue(const ForwardBatch& batch) {
  const int32_t num_tokens = static_cast<int32_t>(batch.tokens.size());
  const int32_t num_seqs = static_cast<int32_t>(batch.seqs.size());
  const int32_t num_rows = static_cast<int32_t>(batch.logit_rows.size());
  if (num_seqs > max_seqs || num_rows > max_rows)
    return invalid_argument("forward: ", num_seqs, " sequences / ", num_rows, " logit rows exceed the CUDA model's ",
                            max_seqs, " / ", max_rows);
  const int32_t bucket =
      options.use_graphs && is_plain_decode(batch) ? decode_graph_bucket(num_seqs, options.max_num_seqs) : -1;
  const StepLayout layout = bucket > 0 ? step_layout(bucket, bucket, bucket) : step_layout(num_tokens, num_seqs, num_rows);
  const int64_t words = pack_step(batch, options.block_size, layout, {}, packed);
  step_parity ^= 1;
  ZL_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_start[step_parity], stream));
  ZL_RETURN_IF_ERROR(cuda::copy_to_device(meta.data(), packed.data(), static_cast<size_t>(words) * 4, stream));
  if (bucket > 0) {
    ZL_RETURN_IF_ERROR(run_decode_graph(layout, bucket));
  } else {
    int32_t max_tokens_per_seq = 0;
    for (const SeqChunk& s : batch.seqs) max_tokens_per_seq = std::max(max_tokens_per_seq, s.num_tokens);
    ZL_RETURN_IF_ERROR(run_step(layout, num_tokens, max_tokens_per_seq, 0));
  }
  ZL_CUDA_RETURN_IF_ERROR(cudaEventRecord(step_end[step_parity], stream));
  return ok_status();
}

Status CudaLlamaModel::forward(const ForwardBatch& batch, float* logits, int32_t* greedy_tokens, bool greedy_only) {
  Impl& m = *impl_;
  ZL_RETURN_IF_ERROR(m.enqueue(batch));
  const size_t rows = batch.logit_rows.size();
  const size_t logit_bytes = greedy_only ? 0 : rows * static_cast<size_t>(m.c.vocab_size) * 4;
  if (logit_bytes > 0) ZL_RETURN_IF_ERROR(cuda::copy_to_host(m.logits_host.data(), m.logits.data(), logit_bytes, m.stream));
  if (greedy_tokens != nullptr)
    ZL_RETURN_IF_ERROR(cuda::copy_to_host(m.greedy_host.data(), m.greedy.data(), rows * 4, m.stream));
  ZL_RETURN_IF_ERROR(cuda::synchronize(m.stream));
  if (logit_bytes > 0) std::memcpy(logits, m.logits_host.data(), logit_bytes);
  if (greedy_tokens != nullptr) std::memcpy(greedy_tokens, m.greedy_host.data(), rows * 4);
  const int32_t now = m.step_parity, before = now ^ 1;
  cudaEventElapsedTime(&m.timing.gpu_ms, m.step_start[now], m.step_end[now]);
  m.timing.idle_before_ms = -1.0f;
  if (m.have_previous_step) cudaEventElapsedTime(&m.timing.idle_before_ms, m.step_end[before], m.step_start[now]);
  m.have_previous_step = true;
  return ok_status();
}

Status CudaLlamaModel::enqueue(const ForwardBatch& batch) {
  impl_->have_previous_step = false;  // timings are only kept for forward()
  return impl_->enqueue(batch);
}

Status CudaLlamaModel::synchronize() { return cuda::synchronize(impl_->stream); }

CudaLlamaModel::StepTiming CudaLlamaModel::last_step_timing() const { return impl_->timing; }

void CudaLlamaModel::copy_block(int32_t src, int32_t dst) {
  Impl& m = *impl_;
  const int64_t block_elems = int64_t{m.options.block_size} * m.c.kv_dim();
  for (int32_t layer = 0; layer < m.c.num_layers; ++layer) {
    for (DeviceBuffer* cache : {&m.k_cache, &m.v_cache}) {
      Bf16* base = cache->as<Bf16>() + layer * m.kv_layer_elems();
      Status status = cuda::copy_on_device(base + dst * block_elems, base + src * block_elems,
                                           static_cast<size_t>(block_elems) * 2, m.stream);
      CHECK(status.ok()) << status.to_string();
    }
  }
}

}  // namespace zl
