// The CUDA embedding, add+RMSNorm, RoPE+KV store and SwiGLU kernels against
// the CPU ops on random shapes, widths included that are not multiples of 32
// or of the block size. Tolerances (relative L2 error, see gpu_test_util.h):
//   * bf16 outputs (rmsnorm y, swiglu, KV cache): 4e-3 (bf16 rounding is
//     2^-9 relative per element, ~2.3e-3 in L2 on random data);
//   * f32 outputs (embedding of bf16 rows, residual x, rotated q): 1e-5
//     (sincos / expf / reduction order only).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "gpu_test_util.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/rmsnorm.h"
#include "kernels/cuda/rope.h"
#include "model/llama.h"

namespace zl {
namespace {

using test::from_bf16;
using test::poisoned;
using test::random_floats;
using test::relative_error;
using test::to_bf16;
using test::to_device;
using test::to_host;

TEST(CudaEmbedding, GathersRowsAsF32) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(1);
  for (auto [vocab, dim, num_tokens] : {std::tuple{50, 37, 5}, {1000, 2048, 17}, {7, 1, 3}}) {
    std::vector<uint16_t> table = to_bf16(random_floats(static_cast<size_t>(vocab * dim), rng));
    std::vector<int32_t> tokens(static_cast<size_t>(num_tokens));
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
    auto d_table = to_device(table);
    auto d_tokens = to_device(tokens);
    auto d_x = poisoned<float>(static_cast<size_t>(num_tokens * dim));
    cuda::embedding(d_tokens.as<int32_t>(), d_table.as<uint16_t>(), d_x.as<float>(), num_tokens, dim, nullptr);
    ASSERT_TRUE(cuda::check_launch("embedding").ok());
    std::vector<float> x = to_host<float>(d_x, static_cast<size_t>(num_tokens * dim));
    std::vector<float> ref;
    for (int32_t t : tokens)
      for (int32_t i = 0; i < dim; ++i) ref.push_back(bf16_to_f32(table[static_cast<size_t>(t * dim + i)]));
    EXPECT_EQ(x, ref) << vocab << "x" << dim;
  }
}

TEST(CudaAddRmsNorm, MatchesCpuWithAndWithoutResidualAndRowIndex) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(2);
  for (auto [rows, dim] : {std::pair{1, 64}, {7, 2048}, {33, 100}, {5, 4097}}) {
    const size_t n = static_cast<size_t>(rows * dim);
    std::vector<float> x = random_floats(n, rng), delta = random_floats(n, rng);
    std::vector<float> weight = random_floats(static_cast<size_t>(dim), rng);
    auto d_x = to_device(x), d_delta = to_device(delta), d_w = to_device(weight);
    auto d_y = poisoned<uint16_t>(n);
    cuda::add_rmsnorm(d_x.as<float>(), d_delta.as<float>(), d_w.as<float>(), d_y.as<uint16_t>(), nullptr, rows, dim,
                      1e-5f, nullptr);
    ASSERT_TRUE(cuda::check_launch("add_rmsnorm").ok());
    std::vector<float> sum(n), ref(n);
    cpu::add_f32(x.data(), delta.data(), sum.data(), static_cast<int64_t>(n));
    cpu::rmsnorm_f32(sum.data(), weight.data(), ref.data(), rows, dim, 1e-5f);
    EXPECT_LT(relative_error(to_host<float>(d_x, n), sum), 1e-6) << rows << "x" << dim;
    EXPECT_LT(relative_error(from_bf16(to_host<uint16_t>(d_y, n)), ref), 4e-3) << rows << "x" << dim;

    // Picking rows (the final norm on the logit rows only): rows in reverse.
    std::vector<int32_t> pick(static_cast<size_t>(rows));
    for (int32_t r = 0; r < rows; ++r) pick[static_cast<size_t>(r)] = rows - 1 - r;
    auto d_pick = to_device(pick);
    auto d_y2 = poisoned<uint16_t>(n);
    cuda::add_rmsnorm(d_x.as<float>(), nullptr, d_w.as<float>(), d_y2.as<uint16_t>(), d_pick.as<int32_t>(), rows, dim,
                      1e-5f, nullptr);
    std::vector<float> picked_ref;
    for (int32_t r = 0; r < rows; ++r)
      picked_ref.insert(picked_ref.end(), ref.begin() + (rows - 1 - r) * dim, ref.begin() + (rows - r) * dim);
    EXPECT_LT(relative_error(from_bf16(to_host<uint16_t>(d_y2, n)), picked_ref), 4e-3);
  }
}

TEST(CudaRopeStoreKv, RotatesQAndStoresKvLikeTheCpu) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(3);
  struct Shape { int32_t heads, kv_heads, head_dim; bool interleaved, bias; RopeScalingType scaling; };
  for (Shape s : {Shape{4, 2, 32, false, false, RopeScalingType::kNone}, Shape{32, 8, 64, false, true, RopeScalingType::kLlama3},
                  Shape{8, 8, 8, true, false, RopeScalingType::kLinear}, Shape{6, 3, 130, false, false, RopeScalingType::kNone}}) {
    ModelConfig c;
    c.num_heads = s.heads;
    c.num_kv_heads = s.kv_heads;
    c.head_dim = s.head_dim;
    c.rope_theta = 500000.0f;
    c.rope_scaling.type = s.scaling;
    c.rope_scaling.factor = 8.0f;
    c.rope_scaling.original_max_position_embeddings = 64;
    std::vector<float> inv_freq = rope_inv_freq(c);
    const int32_t num_tokens = 9, num_slots = 64;
    const int64_t q_dim = c.q_dim(), kv_dim = c.kv_dim(), width = q_dim + 2 * kv_dim;
    std::vector<float> qkv = random_floats(static_cast<size_t>(num_tokens * width), rng);
    std::vector<float> bias = random_floats(static_cast<size_t>(width), rng);
    std::vector<int32_t> positions(num_tokens), slots(num_tokens);
    for (int32_t t = 0; t < num_tokens; ++t) {
      positions[t] = t == num_tokens - 1 ? 100000 : 3 * t + 1;  // one far position (large angles)
      slots[t] = t == 4 ? -1 : (num_slots - 1 - 5 * t + num_slots) % num_slots;  // -1: padding, not stored
    }
    auto d_qkv = to_device(qkv), d_bias = to_device(bias), d_pos = to_device(positions), d_slots = to_device(slots);
    auto d_freq = to_device(inv_freq);
    auto d_k = to_device(std::vector<uint16_t>(static_cast<size_t>(num_slots * kv_dim), 0));
    auto d_v = to_device(std::vector<uint16_t>(static_cast<size_t>(num_slots * kv_dim), 0));
    cuda::RopeKvArgs a;
    a.qkv = d_qkv.as<float>();
    a.bias = s.bias ? d_bias.as<float>() : nullptr;
    a.positions = d_pos.as<int32_t>();
    a.slots = d_slots.as<int32_t>();
    a.inv_freq = d_freq.as<float>();
    a.k_cache = d_k.as<uint16_t>();
    a.v_cache = d_v.as<uint16_t>();
    a.num_tokens = num_tokens;
    a.num_heads = s.heads;
    a.num_kv_heads = s.kv_heads;
    a.head_dim = s.head_dim;
    a.interleaved = s.interleaved;
    cuda::rope_store_kv(a, nullptr);
    ASSERT_TRUE(cuda::check_launch("rope_store_kv").ok());

    std::vector<float> q_ref, q_out, k_ref, k_out, v_ref, v_out;
    std::vector<float> got = to_host<float>(d_qkv, qkv.size());
    std::vector<float> k_cache = from_bf16(to_host<uint16_t>(d_k, static_cast<size_t>(num_slots * kv_dim)));
    std::vector<float> v_cache = from_bf16(to_host<uint16_t>(d_v, static_cast<size_t>(num_slots * kv_dim)));
    for (int32_t t = 0; t < num_tokens; ++t) {
      std::vector<float> row(qkv.begin() + t * width, qkv.begin() + (t + 1) * width);
      if (s.bias)
        for (int64_t i = 0; i < width; ++i) row[static_cast<size_t>(i)] += bias[static_cast<size_t>(i)];
      cpu::rope_f32(row.data(), s.heads, s.head_dim, positions[t], inv_freq.data(), s.interleaved);
      cpu::rope_f32(row.data() + q_dim, s.kv_heads, s.head_dim, positions[t], inv_freq.data(), s.interleaved);
      q_ref.insert(q_ref.end(), row.begin(), row.begin() + q_dim);
      q_out.insert(q_out.end(), got.begin() + t * width, got.begin() + t * width + q_dim);
      if (slots[t] < 0) continue;
      k_ref.insert(k_ref.end(), row.begin() + q_dim, row.begin() + q_dim + kv_dim);
      v_ref.insert(v_ref.end(), row.begin() + q_dim + kv_dim, row.end());
      k_out.insert(k_out.end(), k_cache.begin() + slots[t] * kv_dim, k_cache.begin() + (slots[t] + 1) * kv_dim);
      v_out.insert(v_out.end(), v_cache.begin() + slots[t] * kv_dim, v_cache.begin() + (slots[t] + 1) * kv_dim);
    }
    EXPECT_LT(relative_error(q_out, q_ref), 1e-5) << s.heads << "/" << s.kv_heads << "x" << s.head_dim;
    EXPECT_LT(relative_error(k_out, k_ref), 4e-3);
    EXPECT_LT(relative_error(v_out, v_ref), 4e-3);
    // The padding token's slot stays untouched: count stored rows.
    int64_t nonzero_rows = 0;
    for (int32_t slot = 0; slot < num_slots; ++slot) {
      bool any = false;
      for (int64_t i = 0; i < kv_dim; ++i) any = any || k_cache[static_cast<size_t>(slot * kv_dim + i)] != 0.0f;
      nonzero_rows += any;
    }
    EXPECT_EQ(nonzero_rows, num_tokens - 1);
  }
}

TEST(CudaSwiglu, MatchesCpu) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(4);
  for (auto [tokens, hidden] : {std::pair{1, 8192}, {13, 344}, {3, 33}}) {
    std::vector<float> gate_up = random_floats(static_cast<size_t>(tokens * 2 * hidden), rng, 3.0f);
    auto d_in = to_device(gate_up);
    auto d_out = poisoned<uint16_t>(static_cast<size_t>(tokens * hidden));
    cuda::swiglu(d_in.as<float>(), d_out.as<uint16_t>(), tokens, hidden, nullptr);
    ASSERT_TRUE(cuda::check_launch("swiglu").ok());
    std::vector<float> ref(static_cast<size_t>(tokens * hidden));
    for (int32_t t = 0; t < tokens; ++t)
      cpu::swiglu_f32_scalar(&gate_up[static_cast<size_t>(t * 2 * hidden)], &gate_up[static_cast<size_t>(t * 2 * hidden + hidden)],
                             &ref[static_cast<size_t>(t * hidden)], hidden);
    EXPECT_LT(relative_error(from_bf16(to_host<uint16_t>(d_out, ref.size())), ref), 4e-3) << tokens << "x" << hidden;
  }
}

}  // namespace
}  // namespace zl
