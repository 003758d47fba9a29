// CUDA paged attention (prefill tiles and split-K decode) against the CPU
// attention on the same bf16 K/V values, with scattered block tables, GQA
// groups of 1/2/4/8, head_dim 8 to 256 (not all multiples of 32) and context
// lengths that leave partial tiles and partial blocks. Tolerance: relative L2
// error 5e-3 (bf16 output rounding ~2.3e-3; f32 online softmax otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/thread_pool.h"
#include "gpu_test_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"

namespace zl {
namespace {

using test::from_bf16;
using test::poisoned;
using test::random_floats;
using test::relative_error;
using test::to_bf16;
using test::to_device;
using test::to_host;

struct Case {
  int32_t heads, kv_heads, head_dim, block_size;
  std::vector<int32_t> start_pos, num_tokens;  // per chunk
  int32_t num_splits;                          // 0: prefill path
};

void run_case(const Case& c, std::mt19937& rng) {
  const int32_t num_seqs = static_cast<int32_t>(c.start_pos.size());
  const int64_t kv_dim = int64_t{c.kv_heads} * c.head_dim, q_dim = int64_t{c.heads} * c.head_dim;
  // Each chunk's blocks, shuffled over the pool.
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(num_seqs));
  int32_t num_blocks = 0;
  for (int32_t s = 0; s < num_seqs; ++s)
    num_blocks += (c.start_pos[s] + c.num_tokens[s] + c.block_size - 1) / c.block_size;
  std::vector<int32_t> pool_ids(static_cast<size_t>(num_blocks));
  std::iota(pool_ids.begin(), pool_ids.end(), 0);
  std::shuffle(pool_ids.begin(), pool_ids.end(), rng);
  int32_t next = 0, num_tokens = 0;
  std::vector<int32_t> token_begin, table_begin, flat_tables, positions;
  for (int32_t s = 0; s < num_seqs; ++s) {
    int32_t blocks = (c.start_pos[s] + c.num_tokens[s] + c.block_size - 1) / c.block_size;
    for (int32_t b = 0; b < blocks; ++b) tables[s].push_back(pool_ids[static_cast<size_t>(next++)]);
    token_begin.push_back(num_tokens);
    table_begin.push_back(static_cast<int32_t>(flat_tables.size()));
    flat_tables.insert(flat_tables.end(), tables[s].begin(), tables[s].end());
    for (int32_t t = 0; t < c.num_tokens[s]; ++t) positions.push_back(c.start_pos[s] + t);
    num_tokens += c.num_tokens[s];
  }
  const size_t cache_elems = static_cast<size_t>(int64_t{num_blocks} * c.block_size * kv_dim);
  std::vector<uint16_t> k_bf = to_bf16(random_floats(cache_elems, rng)), v_bf = to_bf16(random_floats(cache_elems, rng));
  std::vector<float> q = random_floats(static_cast<size_t>(num_tokens * q_dim), rng);

  auto d_q = to_device(q), d_k = to_device(k_bf), d_v = to_device(v_bf);
  auto d_begin = to_device(token_begin), d_n = to_device(c.num_tokens), d_start = to_device(c.start_pos);
  auto d_tbegin = to_device(table_begin), d_tables = to_device(flat_tables);
  auto d_out = poisoned<uint16_t>(static_cast<size_t>(num_tokens * q_dim));
  const int32_t splits = std::max(c.num_splits, 1);
  auto d_ws = poisoned<float>(static_cast<size_t>(cuda::attention_split_workspace_floats(num_seqs, c.heads, splits, c.head_dim)));
  cuda::AttentionArgs a;
  a.q = d_q.as<float>();
  a.q_stride = q_dim;
  a.out = d_out.as<uint16_t>();
  a.k_cache = d_k.as<uint16_t>();
  a.v_cache = d_v.as<uint16_t>();
  a.seq_token_begin = d_begin.as<int32_t>();
  a.seq_num_tokens = d_n.as<int32_t>();
  a.seq_start_pos = d_start.as<int32_t>();
  a.table_begin = d_tbegin.as<int32_t>();
  a.block_tables = d_tables.as<int32_t>();
  a.num_seqs = num_seqs;
  a.num_heads = c.heads;
  a.num_kv_heads = c.kv_heads;
  a.head_dim = c.head_dim;
  a.block_size = c.block_size;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.split_workspace = d_ws.as<float>();
  Status status = c.num_splits == 0
                      ? cuda::attention_prefill(a, *std::max_element(c.num_tokens.begin(), c.num_tokens.end()), nullptr)
                      : cuda::attention_decode(a, c.num_splits, nullptr);
  ASSERT_TRUE(status.ok()) << status.to_string();
  std::vector<float> out = from_bf16(to_host<uint16_t>(d_out, static_cast<size_t>(num_tokens * q_dim)));

  std::vector<float> k_f = from_bf16(k_bf), v_f = from_bf16(v_bf), ref(out.size());
  std::vector<const int32_t*> token_tables;
  for (int32_t s = 0; s < num_seqs; ++s)
    for (int32_t t = 0; t < c.num_tokens[s]; ++t) token_tables.push_back(tables[s].data());
  ThreadPool pool(2);
  cpu::AttentionArgs r;
  r.q = q.data();
  r.out = ref.data();
  r.k_cache = k_f.data();
  r.v_cache = v_f.data();
  r.positions = positions.data();
  r.block_tables = token_tables.data();
  r.num_tokens = num_tokens;
  r.num_heads = c.heads;
  r.num_kv_heads = c.kv_heads;
  r.head_dim = c.head_dim;
  r.block_size = c.block_size;
  r.scale = a.scale;
  cpu::attention_f32(pool, r);
  EXPECT_LT(relative_error(out, ref), 5e-3) << c.heads << "/" << c.kv_heads << "x" << c.head_dim << " splits "
                                            << c.num_splits;
}

TEST(CudaAttention, PrefillChunksMatchCpu) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(6);
  run_case({4, 2, 32, 16, {0}, {37}, 0}, rng);                     // one prompt, partial tile and block
  run_case({32, 8, 64, 16, {0, 20, 5}, {100, 33, 1}, 0}, rng);     // mixed chunks (continuation, decode)
  run_case({8, 8, 8, 4, {3, 0}, {9, 70}, 0}, rng);                 // head_dim 8 (stories260K), group 1
  run_case({16, 2, 256, 32, {0}, {65}, 0}, rng);                   // group 8, head_dim 256
  run_case({6, 3, 130, 7, {11}, {29}, 0}, rng);                    // head_dim not a multiple of 32, odd block size
}

TEST(CudaAttention, SplitKDecodeMatchesCpu) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  run_case({32, 8, 64, 16, {0, 1, 31, 32, 33, 500}, {1, 1, 1, 1, 1, 1}, 1}, rng);
  run_case({32, 8, 64, 16, {0, 1, 31, 32, 33, 500}, {1, 1, 1, 1, 1, 1}, 5}, rng);
  run_case({4, 2, 32, 16, {1000, 3}, {1, 1}, 16}, rng);          // more splits than a short context needs
  run_case({8, 1, 128, 8, {257}, {1}, 3}, rng);                   // group 8: two row tiles per kv head
  run_case({4, 4, 8, 4, {6, 0}, {1, 1}, 2}, rng);
  run_case({16, 2, 256, 32, {70, 300}, {1, 1}, 1}, rng);         // group 8, head_dim 256: 4 value pairs per lane
  run_case({8, 2, 96, 16, {200, 1}, {1, 1}, 4}, rng);            // head_dim 96: 2 pairs, the second half used
  run_case({6, 2, 64, 16, {40}, {1}, 2}, rng);                   // group 3: the tiled kernel's decode path
  run_case({6, 3, 130, 7, {50}, {1}, 2}, rng);                   // head_dim % 8 != 0: the tiled kernel too
}

TEST(CudaAttention, PaddingChunksAreSkipped) {
  ZL_REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(8);
  // A zero-token chunk between real ones (as a padded decode bucket has) changes nothing.
  run_case({4, 2, 32, 16, {5, 0, 9}, {1, 0, 1}, 4}, rng);
}

}  // namespace
}  // namespace zl
