// Cache signatures (kv_pool.h) and the policy names. The byte layout hashed
// here is part of the product: clients may compute signatures ahead of time,
// so any change to it must change the pinned values in the tests.
// The hash is compiled in here (the library's header, XXH_INLINE_ALL), not
// called in libxxhash.so: signing runs right after a forward pass has
// evicted all code, and the first call into the shared library each step
// paid for its code, PLT and GOT pages cold
// (bench/results/code_notes.md#inlined-xxh3).
#define XXH_INLINE_ALL  // also gives XXH3_state_t on the stack
#include <xxhash.h>

#include <bit>
#include <cstring>

#include "engine/kv_pool.h"

namespace zl {
namespace {

static_assert(std::endian::native == std::endian::little,
              "signatures hash token ids as little-endian int32; add byte swaps for this host");

BlockSignature from_xxh(XXH128_hash_t h) { return BlockSignature{h.low64, h.high64}; }

// Blocks up to this many tokens are hashed in one shot from a stack buffer;
// longer ones stream (same bytes, same hash).
constexpr size_t kMaxOneShotTokens = 256;

}  // namespace

void put_signature(uint8_t* out, const BlockSignature& s) {
  std::memcpy(out, &s.low, 8);
  std::memcpy(out + 8, &s.high, 8);
}

BlockSignature make_cache_salt(uint64_t model_fingerprint, std::string_view cache_salt) {
  return from_xxh(XXH3_128bits_withSeed(cache_salt.data(), cache_salt.size(), model_fingerprint));
}

BlockSignature sign_block(const BlockSignature& prev, std::span<const int32_t> tokens,
                          const BlockSignature& salt) {
  const size_t token_bytes = tokens.size() * sizeof(int32_t);
  if (tokens.size() <= kMaxOneShotTokens) {
    uint8_t buf[16 + kMaxOneShotTokens * sizeof(int32_t) + 16];
    put_signature(buf, prev);
    if (token_bytes > 0) std::memcpy(buf + 16, tokens.data(), token_bytes);
    put_signature(buf + 16 + token_bytes, salt);
    return from_xxh(XXH3_128bits(buf, 16 + token_bytes + 16));
  }
  uint8_t prev_bytes[16], salt_bytes[16];
  put_signature(prev_bytes, prev);
  put_signature(salt_bytes, salt);
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_128bits_reset(&state);
  XXH3_128bits_update(&state, prev_bytes, 16);
  XXH3_128bits_update(&state, tokens.data(), token_bytes);
  XXH3_128bits_update(&state, salt_bytes, 16);
  return from_xxh(XXH3_128bits_digest(&state));
}

const char* cache_policy_name(CachePolicy policy) {
  switch (policy) {
    case CachePolicy::kContiguous:
      return "contiguous";
    case CachePolicy::kPaged:
      return "paged";
    case CachePolicy::kHybrid:
      return "hybrid";
  }
  return "unknown";
}

StatusOr<CachePolicy> parse_cache_policy(std::string_view name) {
  for (CachePolicy p : {CachePolicy::kContiguous, CachePolicy::kPaged, CachePolicy::kHybrid}) {
    if (name == cache_policy_name(p)) return p;
  }
  return invalid_argument("unknown cache policy '", name,
                          "': expected contiguous, paged or hybrid");
}

}  // namespace zl
