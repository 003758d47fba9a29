// RoPE and the KV write on the device, fused: for each token, add the q/k/v
// biases (Qwen2), rotate q in place and k on the way, and store k and v (bf16)
// at the token's slot of the paged KV pool. Conventions are the CPU rope's
// (kernels/cpu/rope.h): angle = pos * inv_freq[i] in f32, inv_freq already
// scaled (linear / llama3, model/llama.h rope_inv_freq), pairs (2i, 2i+1)
// when interleaved, else (i, i + head_dim/2).
#pragma once

#include <cstdint>

#include "kernels/cuda/runtime.h"

namespace zl::cuda {

struct RopeKvArgs {
  float* qkv = nullptr;             // [num_tokens, q_dim + 2 * kv_dim]: q | k | v; q is rotated in place
  const float* bias = nullptr;      // [q_dim + 2 * kv_dim] or null; added to q, k and v first
  const int32_t* positions = nullptr;  // [num_tokens]
  const int32_t* slots = nullptr;   // [num_tokens] KV row: block_table[pos / bs] * bs + pos % bs; < 0: don't store
  const float* inv_freq = nullptr;  // [head_dim / 2]
  Bf16* k_cache = nullptr;          // one layer: [num_blocks * block_size, kv_dim]
  Bf16* v_cache = nullptr;          // same
  int64_t num_tokens = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  bool interleaved = false;
};

void rope_store_kv(const RopeKvArgs& args, Stream stream);

}  // namespace zl::cuda
