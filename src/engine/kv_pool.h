// The KV pool: which blocks of the KV cache belong to which sequence, which
// hold reusable prefixes, and which are free. It never touches KV data (that
// is model/kv_cache.h); it hands out block ids, and the forward pass reads a
// sequence's KV through its block table: position p lives in block
// table[p / block_size], row p % block_size.
//
// Cache signatures. Every full block of a sequence is named by a 16-byte
// signature, XXH3-128 over (previous block's signature, the block's token ids,
// the salt), the salt being the model's fingerprint and the request's
// cache_salt. Equal prefixes give equal signature chains, so a new sequence
// whose prompt starts like an earlier one shares those blocks (refcounted)
// instead of recomputing them. A released sequence's signed blocks stay
// cached (refcount 0) until their memory is needed, then go least recently
// used first. Sequences with different salts never share.
//
// Policies:
//  - contiguous: admission reserves the sequence's whole extent (prompt +
//    max_new_tokens, after any shared prefix) as one run of consecutive block
//    ids, so an admitted sequence never needs memory again. Best-fit
//    placement keeps external fragmentation low.
//  - paged: admission takes blocks for the prompt only; later blocks come on
//    demand (ensure_capacity) and may fail, and the engine then preempts.
//  - hybrid: contiguous when a run of the right length is free, else paged
//    blocks for the prompt (then on demand).
//
// Threading: owned by the engine thread; no locks. Nothing here allocates
// after construction except a sequence's table, reserved once at admission for
// max_total_tokens (a no-op when a released table is reused), and compact()'s
// list of moves when the caller's has less capacity than num_blocks. The
// prefix index is a table sized once (engine/signature_index.h).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "zerolayer/cache.h"
#include "zerolayer/status.h"

namespace zl {

class KvEventQueue;
class SignatureStats;

struct BlockSignature {
  uint64_t low = 0;
  uint64_t high = 0;
  auto operator<=>(const BlockSignature&) const = default;
};

// The salt of a request: XXH3_128bits_withSeed(cache_salt bytes, seed =
// model_fingerprint).
BlockSignature make_cache_salt(uint64_t model_fingerprint, std::string_view cache_salt);
// XXH3-128 (unseeded) over the bytes prev.low, prev.high, the tokens, salt.low,
// salt.high, every field little-endian (uint64 / int32). For the first block
// of a sequence prev is the all-zero signature. Clients may compute these.
BlockSignature sign_block(const BlockSignature& prev, std::span<const int32_t> tokens,
                          const BlockSignature& salt);
// The 16 bytes of a signature as clients see it: low, then high, little-endian.
void put_signature(uint8_t* out, const BlockSignature& s);

struct KvPoolConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  CachePolicy policy = CachePolicy::kContiguous;
};

// One sequence's blocks. Created by admit(), owned by the engine's request,
// passed back to every other call, emptied by release().
// Ordered so that what commit() and ensure_capacity() read for a decoding
// sequence fits one cache line (the salt is read only when a block is signed).
struct SeqBlocks {
  std::vector<int32_t> table;         // block ids, position p in table[p / block_size]
  int32_t num_reserved_tokens = 0;    // table.size() * block_size
  int32_t max_total_tokens = 0;       // as given to admit()
  int32_t num_computed_tokens = 0;    // as last given to commit()
  int32_t num_prefix_tokens = 0;      // tokens whose KV came from the cache at admission
  // Leading blocks whose signatures are known (shared at admission, or
  // signed by commit). One signed by commit while an equal block was already
  // in the prefix index stays out of the index (the first one wins).
  int32_t num_signed_blocks = 0;
  bool contiguous = false;            // the non-prefix part is one reserved run
  BlockSignature last_signature;      // signature of table[num_signed_blocks - 1]
  BlockSignature salt;
};

enum class AdmitOutcome {
  kAdmitted,     // blocks assigned; out->num_prefix_tokens tokens need no compute
  kWait,         // not enough memory now; try again later
  kNeverFits,    // needs more blocks than the whole pool
};

// What else a reused prefix needs (engine/window_slots.h: the window layers'
// KV of its last blocks). admit() offers the blocks of the longest cached
// chain and reuses the first usable_prefix_blocks() of them.
class PrefixCheck {
 public:
  virtual int32_t usable_prefix_blocks(std::span<const int32_t> prefix_blocks) const = 0;

 protected:
  ~PrefixCheck() = default;
};

// One step of compaction: the KV data of block src must be copied to dst.
struct BlockMove {
  int32_t src = 0;
  int32_t dst = 0;
};

class KvPool {
 public:
  explicit KvPool(const KvPoolConfig& config);
  ~KvPool();
  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const KvPoolConfig& config() const { return config_; }
  // Where the prefix index's gains and losses go (kv_events.h), or nullptr.
  void set_event_queue(KvEventQueue* queue);

  // Reuses the longest chain of cached full blocks matching `prompt` (never
  // the whole prompt: at least its last token is left to compute, since its
  // logits are needed), then reserves memory as the policy says for
  // max_total_tokens (prompt + max_new_tokens, capped by the caller at the
  // context length). Evicts cached blocks (LRU) when needed, and only when it
  // admits: kWait and kNeverFits leave the pool as it was. Contiguous: when no
  // extent fits beside the shared prefix blocks, it tries again without
  // sharing (the prefix may then be evicted), so a request alone in the pool
  // always fits. Requires a non-empty prompt, prompt.size() <=
  // max_total_tokens and an empty *out (fresh or released). `check`, when
  // given, may shorten the reused prefix.
  AdmitOutcome admit(std::span<const int32_t> prompt, int32_t max_total_tokens,
                     const BlockSignature& salt, SeqBlocks* out, const PrefixCheck* check = nullptr);

  // Makes the table cover num_tokens positions (paged and hybrid grow here;
  // contiguous sequences already have their extent). False when out of
  // memory: the caller preempts someone and retries, or waits (the pool is
  // then unchanged). num_tokens <= max_total_tokens; beyond the extent of a
  // contiguous sequence is a caller bug (CHECK).
  [[nodiscard]] bool ensure_capacity(SeqBlocks& seq, int32_t num_tokens);

  // Tells the pool that KV for tokens[0, num_computed) is written: completed
  // full blocks not signed yet are signed and become shareable, at most
  // max_signs of them now (the rest wait for a later commit, which may repeat
  // num_computed, or for the two calls below). Returns how many it signed.
  int32_t commit(SeqBlocks& seq, std::span<const int32_t> tokens, int32_t num_computed,
                 int32_t max_signs = INT32_MAX);

  // commit(seq, tokens, seq.num_computed_tokens + 1, 0) for a decode's one
  // token, inline: the engine makes it for every decoding sequence every
  // step, and the call with its checks was ~90 instructions a row.
  void commit_decode(SeqBlocks& seq) {
    if (seq.num_computed_tokens >= seq.num_reserved_tokens) [[unlikely]] decode_beyond_reserved(seq);
    ++seq.num_computed_tokens;
    ++num_decode_commits_;
  }

  // Signing many sequences' next blocks at once, in two passes so that their
  // cache misses overlap (the engine signs a step's decode blocks this way):
  // prepare_sign() hashes seq's next completed unsigned block and prefetches
  // what apply_sign() touches; apply_sign() indexes it as commit() would.
  // Apply in the order prepared, with no other call on the pool between, and
  // at most one prepared block per sequence at a time.
  struct PreparedSign {
    SeqBlocks* seq;
    BlockSignature signature;
    int32_t block;
    const int32_t* tokens;  // the block's, for its KV event
  };
  bool has_block_to_sign(const SeqBlocks& seq) const {
    return (seq.num_signed_blocks + 1) * config_.block_size <= seq.num_computed_tokens;
  }
  PreparedSign prepare_sign(SeqBlocks& seq, std::span<const int32_t> tokens) const;
  void apply_sign(const PreparedSign& sign);

  // Returns a finished, aborted or preempted sequence's blocks: signed blocks
  // stay cached (refcount 0, LRU), the rest become free. Leaves seq empty
  // (its table keeps its capacity); releasing an empty seq does nothing.
  // The last block goes to the LRU first, so tails are evicted before the
  // prefixes other prompts may share.
  void release(SeqBlocks& seq);
  // The same for several sequences at once (those finishing in one step): as
  // releasing them one after another, in order, but the blocks they free join
  // the free-run sets once per maximal run over all of them, not once per
  // sequence (neighbouring extents, freed together, coalesce in one insert).
  void release(std::span<SeqBlocks* const> seqs);

  // Gathers free-or-cached blocks into one run of at least target_blocks by
  // sliding used blocks together, in order (extents stay contiguous), over
  // the shortest stretch of the pool that holds that many free-or-cached
  // blocks, so it copies as few blocks as sliding can (target 0: the whole
  // pool). Cached blocks in the way are evicted. Updates the tables of `live`
  // (every sequence holding blocks) and the pool, and fills *moves: the
  // caller must then copy the KV data of each, in order (every dst is free
  // when its copy happens). At most num_blocks moves: *moves with that
  // capacity never reallocates.
  //
  // max_moves > 0 bounds one call (a slice): it stops once it has moved that
  // many blocks and the next used block does not continue the extent of the
  // last one moved, so every extent stays contiguous (a slice may go past
  // max_moves by the rest of one extent). The next call goes on over the
  // same stretch while it still holds target_blocks free-or-cached blocks.
  // before_rewrite, if set, is called with i before live[i]'s table changes
  // (the engine swaps in a copy there while a pass in flight reads it).
  void compact(std::span<SeqBlocks* const> live, int32_t target_blocks, std::vector<BlockMove>* moves,
               int32_t max_moves = 0, const std::function<void(size_t)>& before_rewrite = {});
  // Whether admit() waited for lack of a long enough run rather than of
  // memory: a contiguous extent of max_total_tokens would fit in the free and
  // cached blocks, so compact() may let it in.
  bool compaction_may_help(int32_t max_total_tokens) const;

  // Would a sequence of this many tokens ever fit (pool size only)?
  bool can_ever_fit(int32_t max_total_tokens) const;

  KvPoolStats stats() const;
  // Which prefix chains admissions reused (engine/signature_stats.h).
  const SignatureStats& signature_stats() const;
  // How many live sequences hold `block` (tests, debugging).
  int32_t block_refcount(int32_t block) const;
  // Expensive consistency check for tests: refcounts equal the references
  // held by live SeqBlocks given, free/cached/used partition the pool, the
  // prefix index points at cached-or-used blocks with matching signatures.
  Status check_invariants(std::span<const SeqBlocks* const> live) const;

 private:
  struct Impl;
  [[noreturn, gnu::cold]] static void decode_beyond_reserved(const SeqBlocks& seq);
  // Impl's ahead_slots less the slots commit_decode() filled since.
  int64_t ahead_slots() const;

  KvPoolConfig config_;
  std::unique_ptr<Impl> impl_;
  int64_t num_decode_commits_ = 0;  // each filled one slot reserved ahead
};

}  // namespace zl
