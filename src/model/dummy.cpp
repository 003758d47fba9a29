#include "model/dummy.h"

#include <cmath>
#include <set>
#include <thread>

namespace zl {
namespace {

struct Preset {
  const char* name;
  ModelConfig config;
};

ModelConfig make_config(int32_t vocab, int32_t dim, int32_t layers, int32_t heads, int32_t kv_heads,
                        int32_t hidden, int32_t max_seq_len, bool tied) {
  ModelConfig c;
  c.source_arch = "dummy";
  c.vocab_size = vocab;
  c.dim = dim;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = dim / heads;
  c.hidden_dim = hidden;
  c.max_seq_len = max_seq_len;
  c.tie_word_embeddings = tied;
  c.bos_token_id = 256;  // the byte tokenizer's <s> and </s>
  c.eos_token_ids = {257};
  return c;
}

std::vector<Preset> presets() {
  ModelConfig llama_1b = make_config(128256, 2048, 16, 32, 8, 8192, 131072, true);
  llama_1b.rope_theta = 500000.0f;
  llama_1b.rope_scaling.type = RopeScalingType::kLlama3;
  llama_1b.rope_scaling.factor = 32.0f;
  llama_1b.rope_scaling.low_freq_factor = 1.0f;
  llama_1b.rope_scaling.high_freq_factor = 4.0f;
  llama_1b.rope_scaling.original_max_position_embeddings = 8192;
  // tiny's shape with Gemma's local/global interleave: layers 0-2 attend to
  // the last 40 positions, layer 3 to all.
  ModelConfig tiny_window = make_config(512, 128, 4, 4, 2, 344, 1024, false);
  tiny_window.sliding_window = 40;
  tiny_window.layer_sliding = {1, 1, 1, 0};
  // tiny's attention with Mixtral's experts: 8 of width 64, 2 per token.
  ModelConfig tiny_moe = make_config(512, 128, 4, 4, 2, 344, 1024, false);
  tiny_moe.arch = "mixtral";
  tiny_moe.num_experts = 8;
  tiny_moe.experts_per_token = 2;
  tiny_moe.expert_hidden_dim = 64;
  // Qwen3-30B-A3B's routing (128 experts, 8 per token, width 768 of 2048)
  // at half the width and a sixth of the layers: 0.66B parameters, 0.1B
  // active per token.
  ModelConfig moe_small = make_config(32000, 1024, 8, 16, 4, 3072, 4096, false);
  moe_small.arch = "qwen3_moe";
  moe_small.qk_norm = true;
  moe_small.head_dim = 64;
  moe_small.rope_theta = 1000000.0f;
  moe_small.num_experts = 64;
  moe_small.experts_per_token = 8;
  moe_small.expert_hidden_dim = 384;
  return {
      {"tiny", make_config(512, 128, 4, 4, 2, 344, 1024, false)},
      // tiny's shape with a 4096- and a 16384-token context: room for chat
      // templates' tool prompts, a byte a token (Command R7B's preamble
      // alone is 6,400).
      {"tiny-4k", make_config(512, 128, 4, 4, 2, 344, 4096, false)},
      {"tiny-16k", make_config(512, 128, 4, 4, 2, 344, 16384, false)},
      {"tiny-moe", tiny_moe},
      {"moe-small", moe_small},
      {"tiny-window", tiny_window},
      {"llama-110m", make_config(32000, 768, 12, 12, 12, 2048, 1024, true)},
      {"llama-1b", llama_1b},
  };
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Fills dst[i] = center + half_width * u(i), u uniform in [-1, 1), split over threads.
void fill_uniform(float* dst, int64_t n, uint64_t stream, float center, float half_width) {
  int num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (n < (1 << 20)) num_threads = 1;
  auto work = [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint64_t r = splitmix64(stream ^ splitmix64(static_cast<uint64_t>(i)));
      float u = static_cast<float>(r >> 40) * (1.0f / 8388608.0f) - 1.0f;  // 24 bits
      dst[i] = center + half_width * u;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < num_threads; ++t) threads.emplace_back(work, n * t / num_threads, n * (t + 1) / num_threads);
  work(0, n / num_threads);
  for (auto& th : threads) th.join();
}

}  // namespace

std::vector<std::string> dummy_model_names() {
  std::vector<std::string> names;
  for (const Preset& p : presets()) names.emplace_back(p.name);
  return names;
}

StatusOr<ModelConfig> dummy_config(std::string_view name) {
  std::string known;
  for (const Preset& p : presets()) {
    if (name == p.name) return p.config;
    known += known.empty() ? "" : ", ";
    known += p.name;
  }
  return not_found("unknown dummy model '", name, "'; known: ", known);
}

StatusOr<ModelWeights> dummy_weights(const ModelConfig& config, uint64_t seed, const WeightFormat& format) {
  // Generate every expected tensor in the HF order, then bind them by name so
  // the layout logic of weights.cpp is the only one there is.
  TensorIndex index;
  ModelWeights storage;
  std::vector<TensorSpec> specs = expected_tensors(config, TensorNaming::kHuggingFace);
  uint64_t stream = splitmix64(seed);
  for (const TensorSpec& spec : specs) {
    int64_t n = 1;
    for (int64_t d : spec.shape) n *= d;
    float* data = storage.allocate(n);
    stream = splitmix64(stream);
    bool is_vector = spec.shape.size() == 1;
    bool is_bias = spec.name.find(".bias") != std::string::npos;
    float half_width = is_vector ? 0.1f : std::sqrt(3.0f / static_cast<float>(spec.shape[1]));
    fill_uniform(data, n, stream, is_vector && !is_bias ? 1.0f : 0.0f, half_width);
    TensorInfo info;
    info.name = spec.name;
    info.dtype = DType::kF32;
    info.shape = spec.shape;
    info.data = reinterpret_cast<const uint8_t*>(data);
    info.num_bytes = static_cast<uint64_t>(n) * 4;
    index.emplace(spec.name, std::move(info));
  }
  ZL_ASSIGN_OR_RETURN(ModelWeights weights,
                      load_weights(config, index, TensorNaming::kHuggingFace, "dummy", {}, format));
  // Keep only the generated buffers the weights still point into.
  std::set<const void*> used = {weights.final_norm, weights.tok_embeddings.data, weights.lm_head.data};
  for (const LayerWeights& l : weights.layers) {
    for (const float* v : {l.attn_norm, l.ffn_norm, l.bq, l.bk, l.bv, l.bo, l.q_norm, l.k_norm, l.post_attn_norm,
                           l.post_ffn_norm}) used.insert(v);
    LayerWeights::for_each_matrix(l, [&](const WeightMatrix& m) { used.insert(m.data); });
  }
  for (auto& buffer : storage.owned)
    if (used.count(buffer.get()) != 0) weights.owned.push_back(std::move(buffer));
  return weights;
}

}  // namespace zl
