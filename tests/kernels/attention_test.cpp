// The AVX-512 attention against the scalar reference (per-position online
// softmax) on random shapes: head sizes that are not multiples of 16 and the
// 64 / 128 the vector path specializes, grouped query heads, contexts that end
// inside a 16-position chunk, scattered blocks of several sizes.
// Tolerance: max |out - ref| <= 1e-5 x max |ref| (only the f32 order of the
// dot products and the max/rescale points differ).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"

namespace zl::cpu {
namespace {

struct Shape {
  int32_t heads, kv_heads, head_dim, block_size;
  std::vector<int32_t> positions;  // one sequence per token
};

TEST(AttentionTest, VectorMatchesScalarReference) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "the CPU lacks AVX-512";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  ThreadPool pool(2);
  const std::vector<Shape> shapes = {{1, 1, 16, 4, {0}},          {2, 1, 8, 16, {5, 17}},
                                     {4, 2, 24, 8, {15, 16, 31}}, {3, 3, 80, 16, {40, 0, 63, 64}},
                                     {8, 2, 64, 16, {100, 7}},    {2, 2, 130, 32, {33}},
                                     // Heads of 64 / 128 (the register path), blocks a multiple of 16
                                     // (a chunk in one block) or not (rows found one by one).
                                     {4, 1, 64, 8, {70, 3}},      {2, 1, 128, 16, {90}},
                                     {2, 2, 128, 48, {130, 20}},  {4, 2, 128, 12, {50, 0, 47}}};
  for (const Shape& s : shapes) {
    const int64_t num_tokens = static_cast<int64_t>(s.positions.size());
    const int32_t max_pos = *std::max_element(s.positions.begin(), s.positions.end());
    const int32_t blocks_per_seq = max_pos / s.block_size + 1;
    const int64_t num_blocks = blocks_per_seq * num_tokens;
    const int64_t kv_dim = int64_t{s.kv_heads} * s.head_dim;
    std::vector<float> k(static_cast<size_t>(num_blocks * s.block_size * kv_dim));
    std::vector<float> v(k.size()), q(static_cast<size_t>(num_tokens * s.heads * s.head_dim));
    for (float& x : k) x = u(rng);
    for (float& x : v) x = u(rng);
    for (float& x : q) x = u(rng);
    // Each token's sequence owns a shuffled set of blocks.
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<const int32_t*> tables;
    for (int64_t t = 0; t < num_tokens; ++t) tables.push_back(&ids[static_cast<size_t>(t * blocks_per_seq)]);
    AttentionArgs a;
    a.q = q.data();
    a.k_cache = k.data();
    a.v_cache = v.data();
    a.positions = s.positions.data();
    a.block_tables = tables.data();
    a.num_tokens = num_tokens;
    a.num_heads = s.heads;
    a.num_kv_heads = s.kv_heads;
    a.head_dim = s.head_dim;
    a.block_size = s.block_size;
    a.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    std::vector<float> ref(q.size()), out(q.size(), NAN);
    a.out = ref.data();
    attention_f32(pool, a, Isa::kScalar);
    a.out = out.data();
    attention_f32(pool, a, Isa::kAvx512);
    float worst = 0.0f, max_ref = 0.0f;
    for (size_t i = 0; i < ref.size(); ++i) {
      worst = std::max(worst, std::fabs(out[i] - ref[i]));
      max_ref = std::max(max_ref, std::fabs(ref[i]));
    }
    EXPECT_LE(worst, 1e-5f * max_ref) << "heads " << s.heads << " head_dim " << s.head_dim << " tokens "
                                      << num_tokens;
    EXPECT_GT(max_ref, 0.0f);
  }
}

}  // namespace
}  // namespace zl::cpu
