// The AVX-512 attention against the scalar reference (per-position online
// softmax) on random shapes: head sizes that are not multiples of 16 and the
// 64 / 128 the vector path specializes, grouped query heads, contexts that end
// inside a 16-position chunk, scattered blocks of several sizes.
// Tolerance: max |out - ref| <= 1e-5 x max |ref| (only the f32 order of the
// dot products and the max/rescale points differ). Both paths read the cache
// in each KV format (f32, f16, bf16, fp8, q8_0) and dequantize it to the same
// values, so the bound holds for every format; the formats' own error against
// an f32 cache is bounded separately.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/attention.h"

namespace zl::cpu {
namespace {

struct Shape {
  int32_t heads, kv_heads, head_dim, block_size;
  std::vector<int32_t> positions;  // one sequence per token
  int32_t window = 0;              // sliding window; 0: full causal attention
};

constexpr KvCacheDtype kAllKvDtypes[] = {KvCacheDtype::kF32, KvCacheDtype::kF16, KvCacheDtype::kBF16,
                                         KvCacheDtype::kFp8, KvCacheDtype::kQ8_0};

// Random q / k / v for a shape, each token's sequence owning a shuffled set
// of blocks; the cache holds k and v stored in `dtype`.
struct Problem {
  std::vector<float> q, k, v;
  std::vector<uint8_t> k_blocks, v_blocks;  // k and v in the cache's format
  KvLayout layout;
  std::vector<int32_t> ids;
  std::vector<const int32_t*> tables;
  AttentionArgs args;

  Problem(const Shape& s, std::mt19937& rng, KvCacheDtype dtype = KvCacheDtype::kF32) {
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    const int64_t num_tokens = static_cast<int64_t>(s.positions.size());
    const int32_t max_pos = *std::max_element(s.positions.begin(), s.positions.end());
    const int32_t blocks_per_seq = max_pos / s.block_size + 1;
    const int64_t num_blocks = blocks_per_seq * num_tokens;
    const int64_t kv_dim = int64_t{s.kv_heads} * s.head_dim;
    k.resize(static_cast<size_t>(num_blocks * s.block_size * kv_dim));
    v.resize(k.size());
    q.resize(static_cast<size_t>(num_tokens * s.heads * s.head_dim));
    for (float& x : k) x = u(rng);
    for (float& x : v) x = u(rng);
    for (float& x : q) x = u(rng);
    ids.resize(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int64_t t = 0; t < num_tokens; ++t) tables.push_back(&ids[static_cast<size_t>(t * blocks_per_seq)]);
    // k and v: [num_blocks, block_size, kv_dim], stored position by position.
    layout = kv_layout(dtype, s.kv_heads, s.head_dim, s.block_size, num_blocks);
    k_blocks.resize(static_cast<size_t>(layout.arena_bytes()));
    v_blocks.resize(k_blocks.size());
    for (int64_t r = 0; r < num_blocks * s.block_size; ++r) {
      const auto slot = static_cast<int32_t>(r % s.block_size);
      store_kv(layout, &k[static_cast<size_t>(r * kv_dim)], k_blocks.data(), r / s.block_size, slot);
      store_kv(layout, &v[static_cast<size_t>(r * kv_dim)], v_blocks.data(), r / s.block_size, slot);
    }
    args.q = q.data();
    args.k_cache = k_blocks.data();
    args.v_cache = v_blocks.data();
    args.kv_dtype = dtype;
    args.kv_num_blocks = num_blocks;
    args.positions = s.positions.data();
    args.block_tables = tables.data();
    args.num_tokens = num_tokens;
    args.num_heads = s.heads;
    args.num_kv_heads = s.kv_heads;
    args.head_dim = s.head_dim;
    args.block_size = s.block_size;
    args.scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
    args.window = s.window;
  }
};

TEST(AttentionTest, VectorMatchesScalarReference) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "the CPU lacks AVX-512";
  std::mt19937 rng(7);
  ThreadPool pool(2);
  const std::vector<Shape> shapes = {{1, 1, 16, 4, {0}},          {2, 1, 8, 16, {5, 17}},
                                     {4, 2, 24, 8, {15, 16, 31}}, {3, 3, 80, 16, {40, 0, 63, 64}},
                                     {8, 2, 64, 16, {100, 7}},    {2, 2, 130, 32, {33}},
                                     // Heads of 64 / 128 (the register path), blocks a multiple of 16
                                     // (a chunk in one block) or not (rows found one by one), and
                                     // 1-4 query heads per KV head (run together).
                                     {4, 1, 64, 8, {70, 3}},      {2, 1, 128, 16, {90}},
                                     {2, 2, 128, 48, {130, 20}},  {4, 2, 128, 12, {50, 0, 47}},
                                     {6, 2, 64, 16, {45, 9}},
                                     // Sliding windows whose first position falls inside a
                                     // 16-position chunk, or on its edge, or before position 0.
                                     {4, 2, 64, 16, {70, 3, 31}, 13}, {2, 1, 128, 16, {90, 16}, 16},
                                     {3, 3, 80, 8, {40, 17}, 5},      {2, 2, 130, 32, {33}, 40}};
  for (KvCacheDtype dtype : kAllKvDtypes)
    for (const Shape& s : shapes) {
      Problem p(s, rng, dtype);
      AttentionArgs& a = p.args;
      std::vector<float> ref(p.q.size()), out(p.q.size(), NAN);
      a.out = ref.data();
      attention_f32(pool, a, Isa::kScalar);
      a.out = out.data();
      attention_f32(pool, a, Isa::kAvx512);
      float worst = 0.0f, max_ref = 0.0f;
      for (size_t i = 0; i < ref.size(); ++i) {
        worst = std::max(worst, std::fabs(out[i] - ref[i]));
        max_ref = std::max(max_ref, std::fabs(ref[i]));
      }
      EXPECT_LE(worst, 1e-5f * max_ref) << kv_cache_dtype_name(dtype) << " heads " << s.heads << " head_dim "
                                        << s.head_dim << " tokens " << a.num_tokens;
      EXPECT_GT(max_ref, 0.0f);
    }
}

// Each KV format against the f32 cache holding the same keys and values
// (uniform in [-2, 2]), on whichever kernel the CPU runs. The output is a
// convex mix of value rows, so a value error of e moves it by at most e, and
// a key error moves the scores by up to |q| |k error| (|q| ~ 0.8 sqrt(d) x
// scale). Per value: f16 2^-11 relative, bf16 2^-8, q8_0 scale / 2 =
// absmax / 254, fp8 2^-4 relative. Bounds (x max |out|): f16 1e-3, bf16
// 1e-2, q8_0 2e-2, fp8 8e-2, 1.4-3.6x what these shapes reach (f16 3.7e-4,
// bf16 3.4e-3, q8_0 6.8e-3, fp8 5.7e-2).
TEST(AttentionTest, KvFormatsStayNearTheF32Cache) {
  std::mt19937 rng(5);
  ThreadPool pool(2);
  const std::pair<KvCacheDtype, float> bounds[] = {{KvCacheDtype::kF16, 1e-3f}, {KvCacheDtype::kBF16, 1e-2f},
                                                    {KvCacheDtype::kQ8_0, 2e-2f}, {KvCacheDtype::kFp8, 8e-2f}};
  for (const Shape& s : {Shape{8, 2, 64, 16, {100, 7}}, Shape{2, 1, 128, 16, {300}}, Shape{3, 3, 80, 8, {40, 17}}, Shape{8, 4, 8, 16, {100, 7}}})
    for (auto [dtype, bound] : bounds) {
      std::mt19937 same = rng;  // the same floats for both caches
      Problem exact(s, same), stored(s, rng, dtype);
      std::vector<float> ref(exact.q.size()), out(exact.q.size(), NAN);
      exact.args.out = ref.data();
      attention_f32(pool, exact.args);
      stored.args.out = out.data();
      attention_f32(pool, stored.args);
      float worst = 0.0f, max_ref = 0.0f;
      for (size_t i = 0; i < ref.size(); ++i) {
        worst = std::max(worst, std::fabs(out[i] - ref[i]));
        max_ref = std::max(max_ref, std::fabs(ref[i]));
      }
      EXPECT_LE(worst, bound * max_ref) << kv_cache_dtype_name(dtype) << " head_dim " << s.head_dim;
      EXPECT_GT(worst, 0.0f) << kv_cache_dtype_name(dtype) << " should round something";
      std::printf("%s head_dim %d: max |out - f32| = %.3g x max |out|\n", kv_cache_dtype_name(dtype), s.head_dim,
                  worst / max_ref);
    }
}

// A sliding window against a plain softmax in double over the window's
// positions (pos - window, pos], on whichever kernel the CPU runs.
TEST(AttentionTest, SlidingWindowAttendsOnlyTheLastPositions) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  for (const Shape& s : std::vector<Shape>{{2, 1, 64, 16, {47, 5, 20}, 12}, {4, 2, 24, 8, {33, 40}, 7}}) {
    Problem p(s, rng);
    AttentionArgs& a = p.args;
    std::vector<float> out(p.q.size(), NAN);
    a.out = out.data();
    attention_f32(pool, a);
    const int64_t kv_dim = int64_t{s.kv_heads} * s.head_dim;
    for (int64_t t = 0; t < a.num_tokens; ++t) {
      const int32_t pos = s.positions[static_cast<size_t>(t)];
      for (int32_t h = 0; h < s.heads; ++h) {
        const int64_t kv_offset = int64_t{h / (s.heads / s.kv_heads)} * s.head_dim;
        const float* q = &p.q[static_cast<size_t>((t * s.heads + h) * s.head_dim)];
        std::vector<double> scores, acc(static_cast<size_t>(s.head_dim), 0.0);
        auto row = [&](const std::vector<float>& cache, int32_t pp) {
          int64_t r = int64_t{a.block_tables[t][pp / s.block_size]} * s.block_size + pp % s.block_size;
          return &cache[static_cast<size_t>(r * kv_dim + kv_offset)];
        };
        const int32_t first = std::max(0, pos - s.window + 1);
        double max_score = -INFINITY, sum = 0.0;
        for (int32_t pp = first; pp <= pos; ++pp) {
          double dot = 0.0;
          for (int32_t d = 0; d < s.head_dim; ++d) dot += double{q[d]} * row(p.k, pp)[d];
          scores.push_back(dot * a.scale);
          max_score = std::max(max_score, scores.back());
        }
        for (int32_t pp = first; pp <= pos; ++pp) {
          double w = std::exp(scores[static_cast<size_t>(pp - first)] - max_score);
          sum += w;
          for (int32_t d = 0; d < s.head_dim; ++d) acc[static_cast<size_t>(d)] += w * row(p.v, pp)[d];
        }
        const float* o = &out[static_cast<size_t>((t * s.heads + h) * s.head_dim)];
        for (int32_t d = 0; d < s.head_dim; ++d)
          EXPECT_NEAR(o[d], acc[static_cast<size_t>(d)] / sum, 1e-5) << "token " << t << " head " << h << " dim " << d;
      }
    }
  }
}

// Query heads that share a KV head run together on the vector path; each
// head's output has the bits it gets when it is the only head (one at a time).
TEST(AttentionTest, GroupedHeadsGiveTheBitsOfEachHeadAlone) {
  if (!isa_supported(Isa::kAvx512)) GTEST_SKIP() << "the CPU lacks AVX-512";
  std::mt19937 rng(11);
  ThreadPool pool(2);
  for (KvCacheDtype dtype : {KvCacheDtype::kF32, KvCacheDtype::kQ8_0})
  for (const Shape& s : {Shape{4, 1, 64, 16, {37, 100, 5}}, Shape{6, 2, 64, 8, {20, 63}},
                         Shape{2, 1, 128, 16, {80, 16}}}) {
    Problem p(s, rng, dtype);
    std::vector<float> all(p.q.size(), NAN);
    p.args.out = all.data();
    attention_f32(pool, p.args, Isa::kAvx512);
    const int32_t group = s.heads / s.kv_heads;
    const KvLayout& l = p.layout;
    for (int32_t h = 0; h < s.heads; ++h) {
      // Head h alone: its queries, and its KV head's part of the arenas
      // (head-major: one contiguous run of tiles), which is a one-head arena.
      const int32_t kv = h / group;
      std::vector<float> q1, out1(static_cast<size_t>(p.args.num_tokens * s.head_dim), NAN);
      std::vector<uint8_t> k1, v1;
      for (int64_t t = 0; t < p.args.num_tokens; ++t) {
        const float* qh = &p.q[static_cast<size_t>((t * s.heads + h) * s.head_dim)];
        q1.insert(q1.end(), qh, qh + s.head_dim);
      }
      for (auto [from, to] : {std::pair{&p.k_blocks, &k1}, std::pair{&p.v_blocks, &v1}})
        to->assign(from->begin() + kv * l.head_stride, from->begin() + (kv + 1) * l.head_stride);
      AttentionArgs one = p.args;
      one.q = q1.data();
      one.k_cache = k1.data();
      one.v_cache = v1.data();
      one.out = out1.data();
      one.num_heads = 1;
      one.num_kv_heads = 1;
      attention_f32(pool, one, Isa::kAvx512);
      for (int64_t t = 0; t < p.args.num_tokens; ++t)
        for (int32_t d = 0; d < s.head_dim; ++d)
          ASSERT_EQ(out1[static_cast<size_t>(t * s.head_dim + d)],
                    all[static_cast<size_t>((t * s.heads + h) * s.head_dim + d)])
              << kv_cache_dtype_name(dtype) << " heads " << s.heads << " head_dim " << s.head_dim << " head " << h
              << " token " << t;
    }
  }
}

}  // namespace
}  // namespace zl::cpu
