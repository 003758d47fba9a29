#include "model/llama.h"

#include <cmath>
#include <cstring>

#include "core/aligned_vector.h"
#include "core/check.h"
#include "core/fault.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/argmax.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/llama_cuda.h"
#include "model/moe.h"

namespace zl {

// Activations for up to max_batch_tokens tokens (T), allocated once, each
// on a cache line (where the matmul kernels write past the caches,
// streams_outputs in kernels/cpu/matmul_kernels.h, they need whole lines).
struct LlamaModel::Buffers {
  AlignedVector<float> x;       // [T, dim] residual stream
  AlignedVector<float> xb;      // [T, dim] normalised input of a block
  AlignedVector<float> q;       // [T, q_dim]
  AlignedVector<float> k;       // [T, kv_dim]
  AlignedVector<float> v;       // [T, kv_dim]
  AlignedVector<float> att;     // [T, q_dim] attention output before wo
  AlignedVector<float> proj;    // [T, dim] output of wo / w_down
  AlignedVector<float> gate;    // [T, hidden_dim], a dense MLP's
  AlignedVector<float> up;      // [T, hidden_dim]
  std::vector<int32_t> positions;            // [T]
  std::vector<const int32_t*> block_tables;  // [T] the token's sequence's table
  std::vector<const int32_t*> window_tables; // [T] its window table (cache with window slots)
};

std::vector<float> rope_inv_freq(const ModelConfig& c) {
  const int32_t dim = c.rope_dim();
  std::vector<float> inv_freq(static_cast<size_t>(dim / 2));
  const RopeScaling& rs = c.rope_scaling;
  const std::vector<float>& longrope =
      c.max_seq_len > rs.original_max_position_embeddings ? rs.long_factor : rs.short_factor;
  for (int32_t i = 0; i < dim / 2; ++i) {
    // transformers: 1 / base ** (arange(0, dim, 2).float() / dim), in f32.
    float exponent = static_cast<float>(2 * i) / static_cast<float>(dim);
    float f = 1.0f / std::pow(c.rope_theta, exponent);
    if (rs.type == RopeScalingType::kLinear) {
      f /= rs.factor;
    } else if (rs.type == RopeScalingType::kLongRope) {
      f = 1.0f / (longrope[static_cast<size_t>(i)] * std::pow(c.rope_theta, exponent));
    } else if (rs.type == RopeScalingType::kLlama3) {
      // Long wavelengths are slowed by `factor`, short ones kept, and the band
      // between is interpolated (transformers _compute_llama3_parameters).
      float old_len = static_cast<float>(rs.original_max_position_embeddings);
      float low_freq_wavelen = old_len / rs.low_freq_factor;
      float high_freq_wavelen = old_len / rs.high_freq_factor;
      float wavelen = 2.0f * static_cast<float>(M_PI) / f;
      float scaled = wavelen > low_freq_wavelen ? f / rs.factor : f;
      bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
      if (medium) {
        float smooth = (old_len / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        scaled = (1.0f - smooth) * scaled / rs.factor + smooth * scaled;
      }
      f = scaled;
    }
    inv_freq[static_cast<size_t>(i)] = f;
  }
  return inv_freq;
}

std::vector<float> rope_inv_freq_sliding(const ModelConfig& c) {
  if (c.rope_theta_sliding <= 0.0f) return {};
  ModelConfig local = c;
  local.rope_theta = c.rope_theta_sliding;
  local.rope_scaling = RopeScaling{};
  return rope_inv_freq(local);
}

LlamaModel::LlamaModel(const ModelConfig& config, const ModelWeights& weights, ThreadPool& pool,
                       int32_t max_batch_tokens)
    : config_(config),
      weights_(weights),
      pool_(pool),
      max_batch_tokens_(max_batch_tokens),
      inv_freq_(rope_inv_freq(config)),
      inv_freq_sliding_(rope_inv_freq_sliding(config)),
      buf_(std::make_unique<Buffers>()) {
  CHECK(max_batch_tokens > 0);
  size_t t = static_cast<size_t>(max_batch_tokens);
  buf_->x.resize(t * config.dim);
  buf_->xb.resize(t * config.dim);
  buf_->q.resize(t * config.q_dim());
  buf_->k.resize(t * config.kv_dim());
  buf_->v.resize(t * config.kv_dim());
  buf_->att.resize(t * config.q_dim());
  buf_->proj.resize(t * config.dim);
  if (config.is_moe()) {
    moe_ = std::make_unique<MoeMlp>(config_, max_batch_tokens);
  } else {
    buf_->gate.resize(t * config.hidden_dim);
    buf_->up.resize(t * config.hidden_dim);
  }
  buf_->positions.resize(t);
  buf_->block_tables.resize(t);
  buf_->window_tables.resize(t);
}

LlamaModel::~LlamaModel() = default;

Status LlamaModel::validate(const ForwardBatch& batch, const KvCache& cache) const {
  const int64_t num_tokens = static_cast<int64_t>(batch.tokens.size());
  if (num_tokens == 0) return invalid_argument("forward: empty batch");
  if (num_tokens > max_batch_tokens_)
    return invalid_argument("forward: ", num_tokens, " tokens exceed max_batch_tokens ", max_batch_tokens_);
  if (static_cast<int64_t>(batch.logit_rows.size()) > num_tokens)
    return invalid_argument("forward: more logit rows than tokens");
  for (int32_t id : batch.tokens)
    if (id < 0 || id >= config_.vocab_size)
      return invalid_argument("token id ", id, " is out of range [0, ", config_.vocab_size, ")");
  int64_t next = 0;
  for (const SeqChunk& s : batch.seqs) {
    if (s.token_begin != next || s.num_tokens <= 0 || s.start_pos < 0)
      return invalid_argument("forward: sequence chunks must cover the batch in order");
    next += s.num_tokens;
    int64_t end_pos = int64_t{s.start_pos} + s.num_tokens;
    if (end_pos > config_.max_seq_len)
      return out_of_range("sequence length ", end_pos, " exceeds the model's context of ",
                          config_.max_seq_len, " tokens");
    if (static_cast<int64_t>(s.block_table.size()) * cache.block_size() < end_pos)
      return invalid_argument("forward: block table too short for position ", end_pos - 1);
    for (int32_t b : s.block_table)
      if (b < 0 || b >= cache.num_blocks()) return invalid_argument("forward: block id ", b, " out of range");
    ZL_RETURN_IF_ERROR(validate_window_table(s, cache));
  }
  if (next != num_tokens) return invalid_argument("forward: sequence chunks must cover the batch");
  for (int32_t row : batch.logit_rows)
    if (row < 0 || row >= num_tokens) return invalid_argument("forward: logit row ", row, " out of range");
  return ok_status();
}

// The entries the chunk's windowed layers read: blocks from that of
// start_pos - window + 1 (rounded down to a multiple of 16 positions, where
// the AVX-512 kernel starts its masked chunks) to that of its last position.
Status LlamaModel::validate_window_table(const SeqChunk& s, const KvCache& cache) const {
  if (cache.num_window_slots() == 0) return ok_status();
  const int64_t end_pos = int64_t{s.start_pos} + s.num_tokens;
  const int32_t window = config_.sliding_window;
  const int64_t first = (s.start_pos >= window ? (s.start_pos - window + 1) / 16 * 16 : 0) / cache.block_size();
  const int64_t last = (end_pos - 1) / cache.block_size();
  if (static_cast<int64_t>(s.window_table.size()) <= last)
    return invalid_argument("forward: window table too short for position ", end_pos - 1);
  for (int64_t i = first; i <= last; ++i) {
    const int32_t slot = s.window_table[static_cast<size_t>(i)];
    if (slot < 0 || slot >= cache.num_window_slots()) return invalid_argument("forward: window slot ", slot, " out of range");
  }
  return ok_status();
}

void LlamaModel::attention_block(int32_t layer, int64_t num_tokens, KvCache& cache) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  Buffers& b = *buf_;
  norm_into_xb(w.attn_norm, num_tokens);
  // q, k and v share one quantization of xb and one parallel section.
  const cpu::MatmulTarget qkv[] = {{&w.wq, w.bq, b.q.data()}, {&w.wk, w.bk, b.k.data()}, {&w.wv, w.bv, b.v.data()}};
  cpu::matmul(pool_, b.xb.data(), num_tokens, qkv);

  // Normalise each head of q and k (qk_norm), rotate them, then store k and
  // v at each token's slot in its sequence's blocks.
  const int64_t kv_dim = c.kv_dim();
  uint8_t* k_cache = cache.k(layer);
  uint8_t* v_cache = cache.v(layer);
  const cpu::KvLayout& kv = cache.layout(layer);
  const int32_t window = c.layer_window(layer);
  const int32_t* const* tables = cache.uses_window_table(layer) ? b.window_tables.data() : b.block_tables.data();
  const float* inv_freq = window > 0 && !inv_freq_sliding_.empty() ? inv_freq_sliding_.data() : inv_freq_.data();
  for_token_ranges(pool_, num_tokens, c.q_dim() + 2 * kv_dim, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int32_t pos = b.positions[static_cast<size_t>(t)];
      if (c.qk_norm) {
        float* q = &b.q[t * c.q_dim()];
        float* k = &b.k[t * kv_dim];
        cpu::rmsnorm_f32(q, w.q_norm, q, c.num_heads, c.head_dim, c.rms_norm_eps);
        cpu::rmsnorm_f32(k, w.k_norm, k, c.num_kv_heads, c.head_dim, c.rms_norm_eps);
      }
      cpu::rope_f32(&b.q[t * c.q_dim()], c.num_heads, c.head_dim, pos, inv_freq, c.rope_interleaved, c.rope_dim(),
                    c.rope_scaling.attention_factor);
      cpu::rope_f32(&b.k[t * kv_dim], c.num_kv_heads, c.head_dim, pos, inv_freq, c.rope_interleaved, c.rope_dim(),
                    c.rope_scaling.attention_factor);
      const int32_t block = tables[t][pos / cache.block_size()], slot = pos % cache.block_size();
      cpu::store_kv(kv, &b.k[t * kv_dim], k_cache, block, slot);
      cpu::store_kv(kv, &b.v[t * kv_dim], v_cache, block, slot);
    }
  });

  cpu::AttentionArgs args;
  args.q = b.q.data();
  args.out = b.att.data();
  args.k_cache = k_cache;
  args.v_cache = v_cache;
  args.kv_dtype = kv.dtype;
  args.kv_num_blocks = kv.num_blocks;
  args.positions = b.positions.data();
  args.block_tables = tables;
  args.num_tokens = num_tokens;
  args.num_heads = c.num_heads;
  args.num_kv_heads = c.num_kv_heads;
  args.head_dim = c.head_dim;
  args.block_size = cache.block_size();
  args.scale = c.attention_scale();
  args.window = window;
  args.softcap = c.attn_softcap;
  cpu::attention_f32(pool_, args);

  cpu::matmul(pool_, b.att.data(), w.wo, w.bo, b.proj.data(), num_tokens);
  add_residual(w.post_attn_norm, num_tokens);
}

void LlamaModel::norm_into_xb(const float* weight, int64_t num_tokens) {
  const ModelConfig& c = config_;
  Buffers& b = *buf_;
  for_token_ranges(pool_, num_tokens, c.dim, [&](int64_t t0, int64_t t1) {
    cpu::rmsnorm_f32(&b.x[t0 * c.dim], weight, &b.xb[t0 * c.dim], t1 - t0, c.dim, c.rms_norm_eps);
  });
}

void LlamaModel::add_residual(const float* post_norm, int64_t num_tokens) {
  const int64_t dim = config_.dim;
  Buffers& b = *buf_;
  for_token_ranges(pool_, num_tokens, dim, [&](int64_t t0, int64_t t1) {
    if (post_norm != nullptr)
      cpu::rmsnorm_f32(&b.proj[t0 * dim], post_norm, &b.proj[t0 * dim], t1 - t0, dim, config_.rms_norm_eps);
    cpu::add_f32(&b.x[t0 * dim], &b.proj[t0 * dim], &b.x[t0 * dim], (t1 - t0) * dim);
  });
}

void LlamaModel::mlp_block(int32_t layer, int64_t num_tokens) {
  const ModelConfig& c = config_;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(layer)];
  Buffers& b = *buf_;
  norm_into_xb(w.ffn_norm, num_tokens);
  if (moe_) {
    moe_->forward(pool_, w, b.xb.data(), num_tokens, b.proj.data());
    return add_residual(w.post_ffn_norm, num_tokens);
  }
  const cpu::MatmulTarget gate_up[] = {{&w.w_gate, nullptr, b.gate.data()}, {&w.w_up, nullptr, b.up.data()}};
  cpu::matmul(pool_, b.xb.data(), num_tokens, gate_up);
  const int64_t hidden = c.hidden_dim;
  for_token_ranges(pool_, num_tokens, hidden, [&](int64_t t0, int64_t t1) {
    gated_activation(c.activation, &b.gate[t0 * hidden], &b.up[t0 * hidden], (t1 - t0) * hidden);
  });
  cpu::matmul(pool_, b.gate.data(), w.w_down, nullptr, b.proj.data(), num_tokens);
  add_residual(w.post_ffn_norm, num_tokens);
}

int64_t LlamaModel::moe_expert_runs() const { return moe_ ? moe_->expert_runs() : 0; }

void LlamaModel::use_cuda(std::unique_ptr<CudaLlamaModel> cuda) { cuda_ = std::move(cuda); }

Status LlamaModel::forward(const ForwardBatch& batch, KvCache& cache, float* logits, int32_t* greedy_tokens,
                           bool greedy_only) {
  ZL_RETURN_IF_ERROR(validate(batch, cache));
  if (fault::should_fail(fault::Point::kForward)) return internal_error("the forward pass failed (injected fault)");
  if (cuda_) {
    return cuda_->forward(batch, logits, greedy_tokens, greedy_only && greedy_tokens != nullptr);
  }
  forward_cpu(batch, cache, logits);
  if (greedy_tokens != nullptr)
    cpu::argmax_rows_f32(pool_, logits, static_cast<int64_t>(batch.logit_rows.size()), config_.vocab_size, greedy_tokens);
  // The host work until the next pass (sampling, scheduling, the engine's
  // output stage) needs the cores more than spinning workers do.
  pool_.rest();
  return ok_status();
}

void LlamaModel::forward_cpu(const ForwardBatch& batch, KvCache& cache, float* logits) {
  const ModelConfig& c = config_;
  Buffers& b = *buf_;
  const int64_t num_tokens = static_cast<int64_t>(batch.tokens.size());

  // Per-token position and block table, so kernels need not know about chunks.
  for (const SeqChunk& s : batch.seqs) {
    for (int32_t i = 0; i < s.num_tokens; ++i) {
      b.positions[static_cast<size_t>(s.token_begin + i)] = s.start_pos + i;
      b.block_tables[static_cast<size_t>(s.token_begin + i)] = s.block_table.data();
      b.window_tables[static_cast<size_t>(s.token_begin + i)] = s.window_table.data();
    }
  }
  for (int64_t t = 0; t < num_tokens; ++t) {
    float* x = &b.x[t * c.dim];
    weights_.tok_embeddings.row_to_f32(batch.tokens[t], x);
    if (c.embed_scale != 1.0f)
      for (int32_t i = 0; i < c.dim; ++i) x[i] *= c.embed_scale;
  }

  for (int32_t layer = 0; layer < c.num_layers; ++layer) {
    attention_block(layer, num_tokens, cache);
    mlp_block(layer, num_tokens);
  }

  // Final norm and classifier only for the rows whose logits are wanted.
  const int64_t num_rows = static_cast<int64_t>(batch.logit_rows.size());
  for (int64_t r = 0; r < num_rows; ++r)
    cpu::rmsnorm_f32(&b.x[int64_t{batch.logit_rows[r]} * c.dim], weights_.final_norm, &b.xb[r * c.dim], 1,
                     c.dim, c.rms_norm_eps);
  cpu::matmul(pool_, b.xb.data(), weights_.lm_head, nullptr, logits, num_rows);
  if (c.final_softcap > 0.0f) cpu::softcap_f32(logits, num_rows * c.vocab_size, c.final_softcap);
}

}  // namespace zl
