// The signature histogram: the KV pool counts an admission's reused prefix
// chain, repeated shared prefixes accumulate hits and saved tokens, and the
// bounded table keeps the heavy chains (Space-Saving) with honest error bounds.
#include "engine/signature_stats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "engine/kv_pool.h"

namespace zl {
namespace {

BlockSignature sig(uint64_t n) { return BlockSignature{n, ~n}; }

std::vector<int32_t> prompt_with_prefix(const std::vector<int32_t>& prefix, int32_t tail) {
  std::vector<int32_t> p = prefix;
  p.insert(p.end(), {tail, tail + 1, tail + 2});
  return p;
}

TEST(SignatureStats, RepeatedSharedPrefixIsCountedByThePool) {
  constexpr int32_t kBlockSize = 4;
  KvPool pool(KvPoolConfig{64, kBlockSize, CachePolicy::kPaged});
  const BlockSignature salt = make_cache_salt(7, "");
  std::vector<int32_t> system_prompt(12);  // three full blocks shared by every request
  std::iota(system_prompt.begin(), system_prompt.end(), 100);
  for (int32_t i = 0; i < 5; ++i) {
    std::vector<int32_t> prompt = prompt_with_prefix(system_prompt, 10 * i);
    SeqBlocks seq;
    ASSERT_EQ(pool.admit(prompt, 32, salt, &seq), AdmitOutcome::kAdmitted);
    pool.commit(seq, prompt, static_cast<int32_t>(prompt.size()));
    pool.release(seq);
  }
  const SignatureStats& stats = pool.signature_stats();
  EXPECT_EQ(stats.num_queries(), 5);
  EXPECT_EQ(stats.num_hits(), 4);  // the first computed the prefix, the next four reused it
  ASSERT_EQ(stats.entries().size(), 1u);
  const zl_stats_signature& chain = stats.entries()[0];
  EXPECT_EQ(chain.hits, 4u);
  EXPECT_EQ(chain.error, 0u);
  EXPECT_EQ(chain.num_blocks, 3);
  EXPECT_EQ(chain.num_tokens, 12);
  EXPECT_EQ(chain.tokens_saved, 48u);
  // The chain is named by the signatures clients compute for its first and last blocks.
  BlockSignature first = sign_block(BlockSignature{}, std::span(system_prompt).subspan(0, 4), salt);
  BlockSignature last = sign_block(sign_block(first, std::span(system_prompt).subspan(4, 4), salt),
                                   std::span(system_prompt).subspan(8, 4), salt);
  uint8_t bytes[16];
  put_signature(bytes, first);
  EXPECT_EQ(std::memcmp(chain.root, bytes, 16), 0);
  put_signature(bytes, last);
  EXPECT_EQ(std::memcmp(chain.signature, bytes, 16), 0);
  EXPECT_EQ(pool.stats().prefix_hit_tokens, 48);
}

TEST(SignatureStats, FullTableKeepsHeavyChainsWithErrorBounds) {
  SignatureStats stats;
  const uint64_t capacity = ZL_STATS_MAX_SIGNATURES;
  for (int round = 0; round < 10; ++round) stats.record_admission(sig(1), sig(1000), 2, 32);  // heavy
  for (uint64_t i = 0; i < capacity + 20; ++i) stats.record_admission(sig(2), sig(i), 1, 16);  // one hit each
  stats.record_admission(sig(0), sig(0), 0, 0);  // a miss: counted as a query only
  EXPECT_EQ(stats.num_queries(), int64_t(capacity) + 31);
  EXPECT_EQ(stats.num_hits(), int64_t(capacity) + 30);
  ASSERT_EQ(stats.entries().size(), size_t(capacity));
  uint64_t total_hits = 0;
  const zl_stats_signature* heavy = nullptr;
  for (const zl_stats_signature& e : stats.entries()) {
    total_hits += e.hits - e.error;
    EXPECT_GE(e.hits, e.error + 1);
    if (e.num_blocks == 2) heavy = &e;
  }
  ASSERT_NE(heavy, nullptr) << "the heavy chain was evicted";
  EXPECT_EQ(heavy->hits, 10u);
  EXPECT_EQ(heavy->error, 0u);
  EXPECT_EQ(heavy->tokens_saved, 320u);
  EXPECT_LE(total_hits, capacity + 30) << "lower bounds never exceed the true hits";
}

}  // namespace
}  // namespace zl
