// KvPool: block states, the prefix index, LRU eviction and the three
// placement policies (kv_pool.h states the contract).
//
// Every block is in exactly one state:
//   free    refcount 0, not indexed             in free_runs and avail_runs
//   cached  refcount 0, indexed                 in avail_runs and on the LRU list
//   used    refcount > 0, indexed or not        in neither
// "Indexed" means the prefix index maps the block's signature to it; a block
// is signed exactly when it is indexed, and the index never points at a free
// block (eviction removes the entry before the block is reused).
//
// Allocation rules:
//  - single blocks (paged admission, ensure_capacity): free blocks first,
//    taken from the shortest free run so long runs stay whole for extents;
//    then cached blocks, least recently released first.
//  - extents (contiguous, and hybrid when one fits): the shortest run of free
//    blocks that is long enough, placed at its start (best fit, no eviction);
//    else the shortest run of free-or-cached blocks that is long enough, with
//    the extent at whichever end of that run evicts fewer cached blocks (then
//    the older ones). Searching two ends only keeps admission O(extent).
#include "engine/kv_pool.h"

#include <algorithm>

#include "core/check.h"
#include "core/fault.h"
#include "engine/block_runs.h"
#include "engine/kv_events.h"
#include "engine/signature_index.h"
#include "engine/signature_stats.h"

namespace zl {
namespace {

constexpr int32_t kNone = -1;

int32_t ceil_div(int64_t a, int64_t b) { return static_cast<int32_t>((a + b - 1) / b); }

}  // namespace

struct KvPool::Impl {
  struct Block {
    int32_t refcount = 0;
    bool indexed = false;  // the prefix index maps `signature` to this block
    BlockSignature signature;
    int32_t lru_prev = kNone;  // cached blocks only; toward the least recent
    int32_t lru_next = kNone;
    uint64_t lru_stamp = 0;    // when it last became cached (larger: more recent)
  };
  // Slots a sequence holds that it can never use, and that it has not computed yet.
  struct SlotUse {
    int64_t internal = 0;
    int64_t ahead = 0;
  };

  explicit Impl(const KvPoolConfig& config);

  int32_t num_free() const { return free_runs.num_members(); }
  int32_t num_evictable() const { return avail_runs.num_members(); }
  SlotUse slot_use(const SeqBlocks& seq) const;
  void account_add(const SeqBlocks& seq);
  void account_remove(const SeqBlocks& seq);

  void lru_push_back(int32_t b);
  void lru_remove(int32_t b);
  void uncache(int32_t b);  // cached -> (about to be) used: drop it from the LRU list
  void evict(int32_t b);    // cached -> unindexed; caller takes it out of avail_runs

  void hide_cached(std::span<const int32_t> ids);
  void unhide_cached(std::span<const int32_t> ids);
  void pin_hidden(std::span<const int32_t> ids);
  void take_blocks(int32_t count, std::vector<int32_t>& table);
  BlockRun choose_extent(int32_t len) const;
  void take_extent(BlockRun extent, std::vector<int32_t>& table);
  // Drops one reference; a block that becomes free or cached joins
  // released_free or released_avail (the run sets take them in release()).
  void drop_ref(int32_t b);
  void move_block(int32_t src, int32_t dst, std::vector<BlockMove>& moves);
  BlockRun gathering_segment(int32_t need) const;
  BlockRun resumed_segment(int32_t need) const;
  void mark_extents(std::span<SeqBlocks* const> live, uint8_t value);

  bool try_contiguous(SeqBlocks& seq, int32_t num_prefix_blocks, int32_t num_total_blocks);
  bool try_paged(SeqBlocks& seq, int32_t num_prefix_blocks, int32_t num_prompt_blocks);

  Status check_sequence(const SeqBlocks& seq, std::vector<int32_t>& refcounts) const;
  Status check_blocks(const std::vector<int32_t>& refcounts) const;
  Status check_lru() const;

  int32_t num_blocks;
  int32_t block_size;
  std::vector<Block> blocks;
  // [num_blocks] compaction's relabelling, the identity between compactions:
  // moved_to[src] = dst for each block a compaction moves.
  std::vector<int32_t> moved_to;
  // [num_blocks] a sliced compaction's marks (mark_extents()), 0 between calls.
  std::vector<uint8_t> extent_goes_on;
  BlockRun compacting;   // the stretch a sliced compaction has not finished
  SignatureIndex index;  // at most one entry per block
  KvEventQueue* events = nullptr;  // gains and losses of `index`, for routers
  BlockRuns free_runs;   // free blocks
  BlockRuns avail_runs;  // free or cached blocks: where extents may go
  int32_t lru_head = kNone;  // least recently released cached block
  int32_t lru_tail = kNone;
  uint64_t lru_clock = 0;
  int32_t num_cached = 0;
  int64_t internal_slots = 0;
  int64_t ahead_slots = 0;
  int64_t prefix_query_tokens = 0;
  int64_t prefix_hit_tokens = 0;
  int64_t num_evictions = 0;
  int64_t num_compactions = 0;
  int64_t num_block_moves = 0;
  int32_t max_block_moves = 0;
  // [num_blocks] release()'s scratch: blocks that became free (and free or
  // cached), as runs of consecutive ids, in the order found.
  std::vector<BlockRun> released_free, released_avail;
  // Free-or-cached blocks left idle because the last admission attempt found
  // enough of them but no run long enough (0 after an admission, or when
  // memory itself was short): the pool's external fragmentation.
  int32_t fragmented_wait_blocks = 0;
  SignatureStats signatures;
};

KvPool::Impl::Impl(const KvPoolConfig& config)
    : num_blocks(config.num_blocks),
      block_size(config.block_size),
      blocks(static_cast<size_t>(config.num_blocks)),
      moved_to(static_cast<size_t>(config.num_blocks)),
      extent_goes_on(static_cast<size_t>(config.num_blocks)),
      index(config.num_blocks),
      free_runs(config.num_blocks),
      avail_runs(config.num_blocks) {
  released_free.reserve(static_cast<size_t>(num_blocks));
  released_avail.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = 0; b < num_blocks; ++b) {
    moved_to[static_cast<size_t>(b)] = b;
    free_runs.insert(b);
    avail_runs.insert(b);
  }
}

KvPool::Impl::SlotUse KvPool::Impl::slot_use(const SeqBlocks& seq) const {
  int64_t usable = std::min(seq.num_reserved_tokens, seq.max_total_tokens);
  return SlotUse{seq.num_reserved_tokens - usable, usable - seq.num_computed_tokens};
}

void KvPool::Impl::account_add(const SeqBlocks& seq) {
  SlotUse use = slot_use(seq);
  internal_slots += use.internal;
  ahead_slots += use.ahead;
}

void KvPool::Impl::account_remove(const SeqBlocks& seq) {
  SlotUse use = slot_use(seq);
  internal_slots -= use.internal;
  ahead_slots -= use.ahead;
}

void KvPool::Impl::lru_push_back(int32_t b) {
  Block& block = blocks[b];
  block.lru_prev = lru_tail;
  block.lru_next = kNone;
  block.lru_stamp = ++lru_clock;
  if (lru_tail != kNone) blocks[lru_tail].lru_next = b;
  else lru_head = b;
  lru_tail = b;
}

void KvPool::Impl::lru_remove(int32_t b) {
  Block& block = blocks[b];
  if (block.lru_prev != kNone) blocks[block.lru_prev].lru_next = block.lru_next;
  else lru_head = block.lru_next;
  if (block.lru_next != kNone) blocks[block.lru_next].lru_prev = block.lru_prev;
  else lru_tail = block.lru_prev;
  block.lru_prev = block.lru_next = kNone;
}

void KvPool::Impl::uncache(int32_t b) {
  lru_remove(b);
  --num_cached;
}

void KvPool::Impl::evict(int32_t b) {
  Block& block = blocks[b];
  CHECK(block.refcount == 0 && block.indexed) << "evicting block " << b << " that is not cached";
  index.erase(block.signature);
  if (events) events->removed(block.signature);
  block.indexed = false;
  uncache(b);
  ++num_evictions;
}

// Shared prefix blocks that are cached must not be chosen for the rest of
// the sequence: hide them from avail_runs while placing, then pin or unhide.
void KvPool::Impl::hide_cached(std::span<const int32_t> ids) {
  for (int32_t b : ids) {
    if (blocks[b].refcount == 0) avail_runs.erase(b);
  }
}

void KvPool::Impl::unhide_cached(std::span<const int32_t> ids) {
  for (int32_t b : ids) {
    if (blocks[b].refcount == 0) avail_runs.insert(b);
  }
}

void KvPool::Impl::pin_hidden(std::span<const int32_t> ids) {
  for (int32_t b : ids) {
    if (blocks[b].refcount == 0) uncache(b);
    ++blocks[b].refcount;
  }
}

void KvPool::Impl::take_blocks(int32_t count, std::vector<int32_t>& table) {
  CHECK_LE(count, num_evictable());
  while (count > 0 && num_free() > 0) {
    BlockRun run = free_runs.smallest();
    int32_t len = std::min(run.len, count);
    free_runs.erase_range(run.start, len);
    avail_runs.erase_range(run.start, len);
    for (int32_t b = run.start; b < run.start + len; ++b) {
      blocks[b].refcount = 1;
      table.push_back(b);
    }
    count -= len;
  }
  for (; count > 0; --count) {
    int32_t b = lru_head;
    evict(b);
    avail_runs.erase(b);
    blocks[b].refcount = 1;
    table.push_back(b);
  }
}

BlockRun KvPool::Impl::choose_extent(int32_t len) const {
  BlockRun run = free_runs.best_fit(len);
  if (run.len > 0) return BlockRun{run.start, len};
  run = avail_runs.best_fit(len);
  if (run.len == 0 || run.len == len) return run;
  // Cost of a window: (cached blocks it evicts, most recent stamp among them).
  auto cost = [&](int32_t start) {
    std::pair<int32_t, uint64_t> c{0, 0};
    for (int32_t b = start; b < start + len; ++b) {
      if (!blocks[b].indexed) continue;
      ++c.first;
      c.second = std::max(c.second, blocks[b].lru_stamp);
    }
    return c;
  };
  int32_t tail_start = run.end() - len;
  return BlockRun{cost(tail_start) < cost(run.start) ? tail_start : run.start, len};
}

void KvPool::Impl::take_extent(BlockRun extent, std::vector<int32_t>& table) {
  avail_runs.erase_range(extent.start, extent.len);
  for (int32_t b = extent.start; b < extent.end();) {
    if (blocks[b].indexed) {
      evict(b);
      blocks[b].refcount = 1;
      table.push_back(b++);
      continue;
    }
    BlockRun free_run = free_runs.run_containing(b);
    int32_t end = std::min(free_run.end(), extent.end());
    free_runs.erase_range(b, end - b);
    for (; b < end; ++b) {
      blocks[b].refcount = 1;
      table.push_back(b);
    }
  }
}

namespace {

// Adds block b to runs, growing the last run when b continues it downward
// (release() walks each table from its end).
void add_released(std::vector<BlockRun>& runs, int32_t b) {
  if (!runs.empty() && runs.back().start == b + 1) {
    --runs.back().start;
    ++runs.back().len;
  } else {
    runs.push_back(BlockRun{b, 1});
  }
}

// Inserts runs into `into` after sorting and merging touching ones, so each
// maximal run costs one insert_range. Empties runs.
void insert_released(std::vector<BlockRun>& runs, BlockRuns& into) {
  std::sort(runs.begin(), runs.end(), [](const BlockRun& a, const BlockRun& b) { return a.start < b.start; });
  BlockRun merged;
  for (const BlockRun& run : runs) {
    if (merged.len > 0 && run.start == merged.end()) {
      merged.len += run.len;
      continue;
    }
    if (merged.len > 0) into.insert_range(merged.start, merged.len);
    merged = run;
  }
  if (merged.len > 0) into.insert_range(merged.start, merged.len);
  runs.clear();
}

}  // namespace

void KvPool::Impl::drop_ref(int32_t b) {
  Block& block = blocks[b];
  CHECK(block.refcount > 0) << "releasing block " << b << " with refcount 0";
  if (--block.refcount > 0) return;
  if (block.indexed) {
    lru_push_back(b);
    ++num_cached;
  } else {
    add_released(released_free, b);
  }
  add_released(released_avail, b);
}

// The first num_prefix_blocks entries of seq.table are the shared prefix.
bool KvPool::Impl::try_contiguous(SeqBlocks& seq, int32_t num_prefix_blocks,
                                  int32_t num_total_blocks) {
  std::span<const int32_t> prefix(seq.table.data(), static_cast<size_t>(num_prefix_blocks));
  hide_cached(prefix);
  BlockRun extent = choose_extent(num_total_blocks - num_prefix_blocks);
  if (extent.len == 0) {
    unhide_cached(prefix);
    return false;
  }
  pin_hidden(prefix);
  take_extent(extent, seq.table);
  seq.contiguous = true;
  return true;
}

bool KvPool::Impl::try_paged(SeqBlocks& seq, int32_t num_prefix_blocks,
                             int32_t num_prompt_blocks) {
  std::span<const int32_t> prefix(seq.table.data(), static_cast<size_t>(num_prefix_blocks));
  int32_t num_cached_prefix = 0;
  for (int32_t b : prefix) num_cached_prefix += blocks[b].refcount == 0 ? 1 : 0;
  if (num_evictable() - num_cached_prefix < num_prompt_blocks - num_prefix_blocks) return false;
  hide_cached(prefix);
  pin_hidden(prefix);
  take_blocks(num_prompt_blocks - num_prefix_blocks, seq.table);
  seq.contiguous = false;
  return true;
}

KvPool::KvPool(const KvPoolConfig& config) : config_(config) {
  CHECK(config.num_blocks > 0 && config.block_size > 0)
      << "KV pool of " << config.num_blocks << " blocks of " << config.block_size << " tokens";
  impl_ = std::make_unique<Impl>(config);
}

KvPool::~KvPool() = default;

bool KvPool::can_ever_fit(int32_t max_total_tokens) const {
  return max_total_tokens > 0 && ceil_div(max_total_tokens, config_.block_size) <= config_.num_blocks;
}

AdmitOutcome KvPool::admit(std::span<const int32_t> prompt, int32_t max_total_tokens,
                           const BlockSignature& salt, SeqBlocks* out, const PrefixCheck* check) {
  CHECK(out != nullptr && out->table.empty()) << "admit into a SeqBlocks that holds blocks";
  CHECK(!prompt.empty()) << "admit of an empty prompt";
  CHECK(static_cast<int64_t>(prompt.size()) <= max_total_tokens)
      << "prompt of " << prompt.size() << " tokens beyond max_total_tokens " << max_total_tokens;
  if (!can_ever_fit(max_total_tokens)) return AdmitOutcome::kNeverFits;
  if (fault::should_fail(fault::Point::kKvAdmit)) return AdmitOutcome::kWait;
  const int32_t bs = config_.block_size;
  const int32_t num_prompt = static_cast<int32_t>(prompt.size());
  const int32_t num_total_blocks = ceil_div(max_total_tokens, bs);
  const int32_t num_prompt_blocks = ceil_div(num_prompt, bs);
  Impl& p = *impl_;

  // Longest cached chain, never including the block of the last prompt token.
  out->table.reserve(static_cast<size_t>(num_total_blocks));
  BlockSignature signature;
  BlockSignature root_signature, last_signature;
  for (int32_t i = 0; i < (num_prompt - 1) / bs; ++i) {
    signature = sign_block(signature, prompt.subspan(static_cast<size_t>(i) * bs, bs), salt);
    int32_t hit = p.index.find(signature);
    if (hit < 0) break;
    out->table.push_back(hit);
    if (i == 0) root_signature = signature;
    last_signature = signature;
  }
  int32_t num_prefix_blocks = static_cast<int32_t>(out->table.size());
  if (check != nullptr && num_prefix_blocks > 0) {
    num_prefix_blocks = check->usable_prefix_blocks(out->table);
    out->table.resize(static_cast<size_t>(num_prefix_blocks));
    last_signature = num_prefix_blocks > 0 ? p.blocks[static_cast<size_t>(out->table.back())].signature : BlockSignature{};
    if (num_prefix_blocks == 0) root_signature = BlockSignature{};
  }

  bool placed = false;
  switch (config_.policy) {
    case CachePolicy::kContiguous:
      placed = p.try_contiguous(*out, num_prefix_blocks, num_total_blocks);
      if (!placed && num_prefix_blocks > 0) {
        // The shared blocks may split the only run long enough; without them
        // a request alone in the pool always fits, so never wait on them.
        out->table.clear();
        num_prefix_blocks = 0;
        last_signature = BlockSignature{};
        placed = p.try_contiguous(*out, 0, num_total_blocks);
      }
      break;
    case CachePolicy::kPaged:
      placed = p.try_paged(*out, num_prefix_blocks, num_prompt_blocks);
      break;
    case CachePolicy::kHybrid:
      placed = p.try_contiguous(*out, num_prefix_blocks, num_total_blocks) ||
               p.try_paged(*out, num_prefix_blocks, num_prompt_blocks);
      break;
  }
  if (!placed) {
    out->table.clear();
    // Waiting for a run, not for memory: the memory lies idle, fragmented.
    p.fragmented_wait_blocks = compaction_may_help(max_total_tokens) ? p.num_evictable() : 0;
    return AdmitOutcome::kWait;
  }
  p.fragmented_wait_blocks = 0;
  out->num_reserved_tokens = static_cast<int32_t>(out->table.size()) * bs;
  out->max_total_tokens = max_total_tokens;
  out->num_prefix_tokens = num_prefix_blocks * bs;
  out->num_computed_tokens = out->num_prefix_tokens;
  out->num_signed_blocks = num_prefix_blocks;
  out->last_signature = last_signature;
  out->salt = salt;
  p.account_add(*out);
  p.prefix_query_tokens += num_prompt;
  p.prefix_hit_tokens += out->num_prefix_tokens;
  p.signatures.record_admission(root_signature, last_signature, num_prefix_blocks, out->num_prefix_tokens);
  return AdmitOutcome::kAdmitted;
}

bool KvPool::ensure_capacity(SeqBlocks& seq, int32_t num_tokens) {
  CHECK_LE(num_tokens, seq.max_total_tokens);
  if (num_tokens <= seq.num_reserved_tokens) return true;
  CHECK(!seq.contiguous) << "a contiguous sequence asked for " << num_tokens
                         << " tokens beyond its extent of " << seq.num_reserved_tokens;
  Impl& p = *impl_;
  int32_t needed = ceil_div(num_tokens, config_.block_size) - static_cast<int32_t>(seq.table.size());
  if (needed > p.num_evictable() || fault::should_fail(fault::Point::kKvGrow)) return false;
  p.account_remove(seq);
  p.take_blocks(needed, seq.table);
  seq.num_reserved_tokens = static_cast<int32_t>(seq.table.size()) * config_.block_size;
  p.account_add(seq);
  return true;
}

int32_t KvPool::commit(SeqBlocks& seq, std::span<const int32_t> tokens, int32_t num_computed, int32_t max_signs) {
  CHECK(num_computed >= seq.num_computed_tokens && num_computed <= seq.num_reserved_tokens &&
        num_computed <= static_cast<int64_t>(tokens.size()))
      << "commit of " << num_computed << " tokens after " << seq.num_computed_tokens << ", with "
      << seq.num_reserved_tokens << " reserved and " << tokens.size() << " given";
  // Of the slot accounting (slot_use()) only the slots held ahead change:
  // one decrement, not a removal and an addition (a step commits every
  // running sequence, and the accounting is one chain of memory updates).
  impl_->ahead_slots -= num_computed - seq.num_computed_tokens;
  seq.num_computed_tokens = num_computed;
  int32_t num_signed = 0;
  for (; num_signed < max_signs && has_block_to_sign(seq); ++num_signed) apply_sign(prepare_sign(seq, tokens));
  return num_signed;
}

void KvPool::decode_beyond_reserved(const SeqBlocks& seq) {
  CHECK(false) << "decode commit beyond " << seq.num_reserved_tokens << " reserved tokens";
  __builtin_unreachable();
}

void KvPool::set_event_queue(KvEventQueue* queue) { impl_->events = queue; }

int64_t KvPool::ahead_slots() const { return impl_->ahead_slots - num_decode_commits_; }

KvPool::PreparedSign KvPool::prepare_sign(SeqBlocks& seq, std::span<const int32_t> tokens) const {
  const int32_t bs = config_.block_size;
  const int32_t i = seq.num_signed_blocks;
  CHECK(has_block_to_sign(seq) && (i + 1) * int64_t{bs} <= static_cast<int64_t>(tokens.size()))
      << "block " << i << " of a sequence with " << seq.num_computed_tokens << " computed tokens";
  const std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
  PreparedSign sign{&seq, sign_block(seq.last_signature, block_tokens, seq.salt), seq.table[static_cast<size_t>(i)],
                    block_tokens.data()};
  impl_->index.prefetch(sign.signature);
  __builtin_prefetch(&impl_->blocks[static_cast<size_t>(sign.block)], 1);
  return sign;
}

void KvPool::apply_sign(const PreparedSign& sign) {
  Impl& p = *impl_;
  SeqBlocks& seq = *sign.seq;
  // A sequence that computed the same block concurrently got there first:
  // keep its entry, and this block simply stays unindexed (freed on release).
  if (p.index.insert(sign.signature, sign.block)) {
    p.blocks[sign.block].indexed = true;
    p.blocks[sign.block].signature = sign.signature;
    if (p.events) [[unlikely]]
      p.events->stored(sign.signature, seq.num_signed_blocks > 0 ? &seq.last_signature : nullptr, sign.tokens);
  }
  seq.last_signature = sign.signature;
  ++seq.num_signed_blocks;
}

void KvPool::release(SeqBlocks& seq) {
  SeqBlocks* one = &seq;
  release(std::span<SeqBlocks* const>(&one, 1));
}

void KvPool::release(std::span<SeqBlocks* const> seqs) {
  Impl& p = *impl_;
  for (SeqBlocks* seq : seqs) {
    if (!seq->table.empty()) p.account_remove(*seq);
    // Last block first, so a sequence's tail is evicted before its prefix,
    // which other prompts are likelier to share.
    for (auto it = seq->table.rbegin(); it != seq->table.rend(); ++it) p.drop_ref(*it);
    std::vector<int32_t> table = std::move(seq->table);
    table.clear();  // keeps its capacity for the next admission
    *seq = SeqBlocks{};
    seq->table = std::move(table);
  }
  // Each run-set insert is a few binary searches in arrays that a forward pass
  // has evicted: once per maximal run, not once per block or sequence.
  insert_released(p.released_free, p.free_runs);
  insert_released(p.released_avail, p.avail_runs);
}

const SignatureStats& KvPool::signature_stats() const { return impl_->signatures; }

KvPoolStats KvPool::stats() const {
  const Impl& p = *impl_;
  KvPoolStats s;
  s.num_blocks = p.num_blocks;
  s.num_free_blocks = p.num_free();
  s.num_cached_blocks = p.num_cached;
  s.num_used_blocks = p.num_blocks - p.num_evictable();
  s.num_live_signatures = p.index.size();
  double num_slots = static_cast<double>(p.num_blocks) * p.block_size;
  s.internal_fragmentation = static_cast<double>(p.internal_slots) / num_slots;
  s.reserved_ahead = static_cast<double>(ahead_slots()) / num_slots;
  int32_t evictable = p.num_evictable();
  s.external_fragmentation = static_cast<double>(p.fragmented_wait_blocks) / p.num_blocks;
  s.free_space_scatter =
      evictable == 0 ? 0.0 : 1.0 - static_cast<double>(p.avail_runs.largest_len()) / evictable;
  s.prefix_query_tokens = p.prefix_query_tokens;
  s.prefix_hit_tokens = p.prefix_hit_tokens;
  s.num_evictions = p.num_evictions;
  s.num_compactions = p.num_compactions;
  s.num_block_moves = p.num_block_moves;
  s.max_block_moves = p.max_block_moves;
  return s;
}

// Sliding compaction over a segment: every used block of the segment moves,
// in order, to the lowest position not yet filled, so the segment's
// free-or-cached blocks end up as one run at its end. Order is kept, so a
// contiguous extent stays contiguous, and moving a block rewrites it in every
// table that holds it (shared prefix blocks too) and in the prefix index. The
// segment is the shortest one that holds target_blocks free-or-cached blocks
// (so it copies the fewest blocks), or the whole pool when target_blocks is 0.
// A slice (max_moves) that stops early leaves its segment in `compacting`;
// the next call finds the blocks before its stop already in place.
void KvPool::compact(std::span<SeqBlocks* const> live, int32_t target_blocks, std::vector<BlockMove>* moves,
                     int32_t max_moves, const std::function<void(size_t)>& before_rewrite) {
  Impl& p = *impl_;
  moves->clear();
  if (target_blocks > 0 && p.avail_runs.largest_len() >= target_blocks) {
    p.compacting = BlockRun{};
    return;
  }
  BlockRun segment = target_blocks > 0 ? p.resumed_segment(target_blocks) : BlockRun{0, p.num_blocks};
  if (segment.len == 0) return;
  if (max_moves > 0) p.mark_extents(live, 1);
  int32_t cursor = segment.start;
  int32_t b = segment.start;
  for (; b < segment.end(); ++b) {
    if (p.blocks[static_cast<size_t>(b)].refcount == 0) continue;
    if (b != cursor) {
      // A slice ends only where no extent goes on from the last block moved.
      const bool continues = !moves->empty() && moves->back().src == b - 1 && p.extent_goes_on[static_cast<size_t>(b - 1)];
      if (max_moves > 0 && static_cast<int32_t>(moves->size()) >= max_moves && !continues) break;
      p.move_block(b, cursor, *moves);
    }
    ++cursor;
  }
  if (max_moves > 0) p.mark_extents(live, 0);
  p.compacting = target_blocks > 0 && b < segment.end() ? segment : BlockRun{};
  if (moves->empty()) return;
  // Every block moves at most once (each src is a distinct used block), so
  // one pass relabels every table entry, shared prefix blocks included.
  for (const BlockMove& move : *moves) p.moved_to[static_cast<size_t>(move.src)] = move.dst;
  auto moved = [&](int32_t block) { return p.moved_to[static_cast<size_t>(block)] != block; };
  for (size_t i = 0; i < live.size(); ++i) {
    std::vector<int32_t>& table = live[i]->table;
    if (!std::any_of(table.begin(), table.end(), moved)) continue;
    if (before_rewrite) before_rewrite(i);  // may give `table` a copy to rewrite
    for (int32_t& block : table) block = p.moved_to[static_cast<size_t>(block)];
  }
  for (const BlockMove& move : *moves) p.moved_to[static_cast<size_t>(move.src)] = move.src;
  ++p.num_compactions;
  p.num_block_moves += static_cast<int64_t>(moves->size());
  p.max_block_moves = std::max(p.max_block_moves, static_cast<int32_t>(moves->size()));
}

// The stretch a sliced compaction was working on while it still holds
// `need` free-or-cached blocks (sequences finished or were admitted since),
// else the shortest one now.
BlockRun KvPool::Impl::resumed_segment(int32_t need) const {
  if (compacting.len > 0) {
    int32_t num_avail = 0;
    for (int32_t b = compacting.start; b < compacting.end(); ++b)
      num_avail += blocks[static_cast<size_t>(b)].refcount == 0 ? 1 : 0;
    if (num_avail >= need) return compacting;
  }
  return gathering_segment(need);
}

// extent_goes_on[b] = value for each block b followed by b + 1 in the
// extent of a contiguous sequence of `live` (its blocks past the prefix).
void KvPool::Impl::mark_extents(std::span<SeqBlocks* const> live, uint8_t value) {
  for (const SeqBlocks* seq : live) {
    if (!seq->contiguous) continue;
    const size_t num_prefix_blocks = static_cast<size_t>(seq->num_prefix_tokens / block_size);
    for (size_t i = num_prefix_blocks + 1; i < seq->table.size(); ++i)
      extent_goes_on[static_cast<size_t>(seq->table[i - 1])] = value;
  }
}

// The shortest segment [start, end) holding at least `need` free-or-cached
// blocks (len 0: the pool has fewer). Being shortest, it starts and ends with
// such a block; its other blocks are what compaction copies.
BlockRun KvPool::Impl::gathering_segment(int32_t need) const {
  auto avail = [&](int32_t b) { return blocks[static_cast<size_t>(b)].refcount == 0 ? 1 : 0; };
  BlockRun best;
  int32_t start = 0, num_avail = 0;
  for (int32_t b = 0; b < num_blocks; ++b) {
    num_avail += avail(b);
    while (start < b && num_avail - avail(start) >= need) num_avail -= avail(start++);
    if (num_avail >= need && (best.len == 0 || b + 1 - start < best.len)) best = BlockRun{start, b + 1 - start};
  }
  return best;
}

bool KvPool::compaction_may_help(int32_t max_total_tokens) const {
  return config_.policy != CachePolicy::kPaged &&
         ceil_div(max_total_tokens, config_.block_size) <= impl_->num_evictable();
}

// src is used, dst free or cached (then evicted); src ends free.
void KvPool::Impl::move_block(int32_t src, int32_t dst, std::vector<BlockMove>& moves) {
  Block& to = blocks[static_cast<size_t>(dst)];
  Block& from = blocks[static_cast<size_t>(src)];
  CHECK(to.refcount == 0 && from.refcount > 0) << "moving block " << src << " onto block " << dst;
  if (to.indexed) {
    evict(dst);
  } else {
    free_runs.erase(dst);
  }
  avail_runs.erase(dst);
  to.refcount = from.refcount;
  to.indexed = from.indexed;
  to.signature = from.signature;
  if (from.indexed) index.remap(from.signature, dst);
  from = Block{};
  free_runs.insert(src);
  avail_runs.insert(src);
  moves.push_back({src, dst});
}

int32_t KvPool::block_refcount(int32_t block) const {
  CHECK(block >= 0 && block < config_.num_blocks) << "block id " << block;
  return impl_->blocks[block].refcount;
}

Status KvPool::Impl::check_sequence(const SeqBlocks& seq, std::vector<int32_t>& refcounts) const {
  const int32_t num_table = static_cast<int32_t>(seq.table.size());
  if (seq.num_reserved_tokens != num_table * block_size) {
    return internal_error("a sequence reserves ", seq.num_reserved_tokens, " tokens in ", num_table,
                          " blocks");
  }
  if (seq.num_computed_tokens > seq.num_reserved_tokens ||
      seq.num_computed_tokens < seq.num_prefix_tokens ||
      seq.num_signed_blocks * block_size > seq.num_computed_tokens ||
      seq.num_prefix_tokens % block_size != 0) {
    return internal_error("a sequence has computed ", seq.num_computed_tokens, " tokens, prefix ",
                          seq.num_prefix_tokens, ", ", seq.num_signed_blocks,
                          " signed blocks and ", seq.num_reserved_tokens, " reserved");
  }
  const int32_t num_prefix_blocks = seq.num_prefix_tokens / block_size;
  for (int32_t i = 0; i < num_table; ++i) {
    int32_t b = seq.table[i];
    if (b < 0 || b >= num_blocks) return internal_error("a table holds block id ", b);
    if (std::find(seq.table.begin(), seq.table.begin() + i, b) != seq.table.begin() + i) {
      return internal_error("a table holds block ", b, " twice");
    }
    if (seq.contiguous && i > num_prefix_blocks && b != seq.table[i - 1] + 1) {
      return internal_error("a contiguous extent breaks at table entry ", i, " (block ", b, ")");
    }
    ++refcounts[b];
  }
  if (seq.contiguous && num_table != ceil_div(seq.max_total_tokens, block_size)) {
    return internal_error("a contiguous sequence holds ", num_table, " blocks for ",
                          seq.max_total_tokens, " tokens");
  }
  return ok_status();
}

Status KvPool::Impl::check_blocks(const std::vector<int32_t>& refcounts) const {
  std::vector<uint8_t> is_free(static_cast<size_t>(num_blocks), 0);
  std::vector<uint8_t> is_avail(static_cast<size_t>(num_blocks), 0);
  int32_t num_indexed = 0;
  int32_t num_cached_seen = 0;
  for (int32_t b = 0; b < num_blocks; ++b) {
    const Block& block = blocks[b];
    if (block.refcount != refcounts[b]) {
      return internal_error("block ", b, " has refcount ", block.refcount, " but ", refcounts[b],
                            " live references");
    }
    is_avail[b] = block.refcount == 0;
    is_free[b] = block.refcount == 0 && !block.indexed;
    num_cached_seen += block.refcount == 0 && block.indexed ? 1 : 0;
    if (!block.indexed) continue;
    ++num_indexed;
    if (index.find(block.signature) != b) {
      return internal_error("indexed block ", b, " is not what the index maps its signature to");
    }
  }
  if (num_indexed != index.size()) {
    return internal_error("the prefix index has ", index.size(), " entries for ", num_indexed,
                          " indexed blocks");
  }
  if (num_cached_seen != num_cached) {
    return internal_error(num_cached_seen, " blocks are cached, counted ", num_cached);
  }
  ZL_RETURN_IF_ERROR(free_runs.check(is_free).with_prefix("free runs"));
  return avail_runs.check(is_avail).with_prefix("free-or-cached runs");
}

Status KvPool::Impl::check_lru() const {
  int32_t count = 0;
  int32_t prev = kNone;
  for (int32_t b = lru_head; b != kNone; prev = b, b = blocks[b].lru_next) {
    const Block& block = blocks[b];
    if (block.refcount != 0 || !block.indexed) return internal_error("LRU holds uncached block ", b);
    if (block.lru_prev != prev) return internal_error("LRU back link of block ", b, " is broken");
    if (prev != kNone && blocks[prev].lru_stamp >= block.lru_stamp) {
      return internal_error("LRU stamps decrease at block ", b);
    }
    if (++count > num_cached) return internal_error("LRU list is longer than the cached count");
  }
  if (prev != lru_tail) return internal_error("LRU tail is ", lru_tail, ", list ends at ", prev);
  if (count != num_cached) return internal_error("LRU holds ", count, " of ", num_cached, " cached");
  return ok_status();
}

Status KvPool::check_invariants(std::span<const SeqBlocks* const> live) const {
  const Impl& p = *impl_;
  std::vector<int32_t> refcounts(static_cast<size_t>(p.num_blocks), 0);
  int64_t internal_slots = 0;
  int64_t held_ahead = 0;
  for (const SeqBlocks* seq : live) {
    if (seq->table.empty()) continue;  // released, or never admitted
    ZL_RETURN_IF_ERROR(p.check_sequence(*seq, refcounts));
    Impl::SlotUse use = p.slot_use(*seq);
    internal_slots += use.internal;
    held_ahead += use.ahead;
  }
  if (internal_slots != p.internal_slots || held_ahead != ahead_slots()) {
    return internal_error("slot accounting says ", p.internal_slots, " internal and ",
                          ahead_slots(), " ahead; live sequences hold ", internal_slots, " and ",
                          held_ahead);
  }
  ZL_RETURN_IF_ERROR(p.check_blocks(refcounts));
  return p.check_lru();
}

}  // namespace zl
