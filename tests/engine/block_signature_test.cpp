#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "engine/kv_pool.h"

namespace zl {
namespace {

std::vector<int32_t> iota_tokens(size_t n, int32_t first) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// The documented byte layout, built by hand: prev, tokens, salt.
BlockSignature reference_sign(const BlockSignature& prev, const std::vector<int32_t>& tokens,
                              const BlockSignature& salt) {
  std::vector<uint8_t> bytes(32 + tokens.size() * 4);
  std::memcpy(bytes.data(), &prev.low, 8);
  std::memcpy(bytes.data() + 8, &prev.high, 8);
  if (!tokens.empty()) std::memcpy(bytes.data() + 16, tokens.data(), tokens.size() * 4);
  std::memcpy(bytes.data() + 16 + tokens.size() * 4, &salt.low, 8);
  std::memcpy(bytes.data() + 24 + tokens.size() * 4, &salt.high, 8);
  XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return BlockSignature{h.low64, h.high64};
}

TEST(BlockSignatureTest, SameInputsSameSignature) {
  BlockSignature salt = make_cache_salt(7, "x");
  auto tokens = iota_tokens(16, 5);
  EXPECT_EQ(sign_block({}, tokens, salt), sign_block({}, tokens, salt));
  EXPECT_EQ(make_cache_salt(7, "x"), salt);
}

TEST(BlockSignatureTest, SaltPrevAndTokensAllMatter) {
  BlockSignature salt = make_cache_salt(7, "");
  auto tokens = iota_tokens(16, 5);
  BlockSignature base = sign_block({}, tokens, salt);
  EXPECT_NE(sign_block({}, tokens, make_cache_salt(7, "tenant")), base);
  EXPECT_NE(sign_block({}, tokens, make_cache_salt(8, "")), base);
  EXPECT_NE(sign_block(BlockSignature{1, 0}, tokens, salt), base);
  EXPECT_NE(sign_block(BlockSignature{0, 1}, tokens, salt), base);
  auto other = tokens;
  other[15] += 1;
  EXPECT_NE(sign_block({}, other, salt), base);
  // Chaining: the same block after different prefixes differs.
  EXPECT_NE(sign_block(base, tokens, salt), base);
}

TEST(BlockSignatureTest, PinnedValues) {
  // Pinned so that a change of algorithm or byte layout is caught: clients
  // compute these ahead of time.
  BlockSignature salt = make_cache_salt(0x1234, "tenant-a");
  XXH128_hash_t seeded = XXH3_128bits_withSeed("tenant-a", 8, 0x1234);
  EXPECT_EQ(salt, (BlockSignature{seeded.low64, seeded.high64}));
  EXPECT_EQ(salt, (BlockSignature{0x7a364bfc98d91996ull, 0x3662a59e6cd24d39ull}));

  auto tokens = iota_tokens(16, 100);
  BlockSignature sig = sign_block({}, tokens, salt);
  EXPECT_EQ(sig, reference_sign({}, tokens, salt));
  EXPECT_EQ(sig, (BlockSignature{0x4410421ef288dabcull, 0xac30bdaf83aa7660ull}));
}

TEST(BlockSignatureTest, LongBlocksStreamTheSameBytes) {
  BlockSignature salt = make_cache_salt(3, "s");
  BlockSignature prev{11, 22};
  for (size_t n : {0u, 1u, 255u, 256u, 257u, 1000u}) {
    auto tokens = iota_tokens(n, -50);
    EXPECT_EQ(sign_block(prev, tokens, salt), reference_sign(prev, tokens, salt)) << n << " tokens";
  }
}

TEST(BlockSignatureTest, SignaturesAreOrdered) {
  // Field order: low first, then high.
  EXPECT_LT((BlockSignature{1, 0}), (BlockSignature{2, 0}));
  EXPECT_LT((BlockSignature{5, 0}), (BlockSignature{5, 1}));
  EXPECT_LT((BlockSignature{5, 9}), (BlockSignature{6, 0}));
}

TEST(CachePolicyTest, NamesRoundTrip) {
  for (CachePolicy p : {CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid}) {
    auto parsed = parse_cache_policy(cache_policy_name(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = parse_cache_policy("vllm");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("vllm"), std::string::npos);
}

}  // namespace
}  // namespace zl
