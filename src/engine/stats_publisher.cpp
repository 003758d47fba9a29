#include "engine/stats_publisher.h"

#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "core/seqlock.h"
#include "engine/engine_core.h"
#include "engine/signature_stats.h"

namespace zl {
namespace {

static_assert(Histogram::kNumBuckets == ZL_STATS_HISTOGRAM_BUCKETS && Histogram::kSubBits == ZL_STATS_HISTOGRAM_SUB_BITS,
              "the stats region's histograms are zerolayer/histogram.h's buckets");

template <typename T>
zl_stats_section section_of(const zl_stats_region& region, const T& member) {
  return {uint64_t(reinterpret_cast<const uint8_t*>(&member) - reinterpret_cast<const uint8_t*>(&region)), sizeof(T)};
}

void write_header(zl_stats_region& r, size_t bytes) {
  zl_stats_header& h = r.header;
  h.version = ZL_STATS_VERSION;
  h.header_bytes = sizeof(zl_stats_header);
  h.total_bytes = bytes;
  h.num_histograms = ZL_STATS_NUM_HISTOGRAMS;
  h.histogram_buckets = ZL_STATS_HISTOGRAM_BUCKETS;
  h.histogram_sub_bits = ZL_STATS_HISTOGRAM_SUB_BITS;
  h.max_signatures = ZL_STATS_MAX_SIGNATURES;
  h.request_ring_slots = ZL_STATS_REQUEST_RING_SLOTS;
  h.max_prefill_chunks = ZL_STATS_MAX_PREFILL_CHUNKS;
  h.max_decode_steps = ZL_STATS_MAX_DECODE_STEPS;
  h.config = section_of(r, r.config);
  h.counters = section_of(r, r.counters);
  h.signatures = section_of(r, r.signatures);
  h.requests = section_of(r, r.requests);
  for (uint32_t i = 0; i < ZL_STATS_NUM_HISTOGRAMS; ++i) h.histograms[i] = section_of(r, r.histograms[i]);
}

}  // namespace

StatusOr<std::unique_ptr<StatsPublisher>> StatsPublisher::create(void* region, size_t bytes,
                                                                 const zl_stats_config& config) {
  if (region == nullptr || reinterpret_cast<uintptr_t>(region) % alignof(zl_stats_region) != 0)
    return invalid_argument("stats region: needs an ", alignof(zl_stats_region), "-byte aligned address");
  if (bytes < sizeof(zl_stats_region))
    return invalid_argument("stats region: ", bytes, " bytes is too small; the layout needs ", sizeof(zl_stats_region));
  auto* r = static_cast<zl_stats_region*>(region);
  std::atomic_ref<uint64_t>(r->header.magic).store(0, std::memory_order_release);  // readers: not valid
  std::memset(static_cast<uint8_t*>(region) + sizeof(uint64_t), 0, sizeof(zl_stats_region) - sizeof(uint64_t));
  write_header(*r, bytes);
  const uint64_t now = uint64_t(monotonic_ns(std::chrono::steady_clock::now()));
  std::memcpy(reinterpret_cast<uint8_t*>(&r->config) + sizeof(zl_stats_seqlock),
              reinterpret_cast<const uint8_t*>(&config) + sizeof(zl_stats_seqlock),
              sizeof(config) - sizeof(zl_stats_seqlock));
  r->config.model[sizeof(r->config.model) - 1] = '\0';
  r->config.cache_policy[sizeof(r->config.cache_policy) - 1] = '\0';
  r->config.weight_format[sizeof(r->config.weight_format) - 1] = '\0';
  r->config.server_pid = getpid();
  r->config.start_ns = now;
  r->config.lock.publish_ns = now;
  std::atomic_ref<uint64_t>(r->header.magic).store(ZL_STATS_MAGIC, std::memory_order_release);
  return std::unique_ptr<StatsPublisher>(new StatsPublisher(r));
}

void StatsPublisher::attach(EngineCore& core) {
  core.request_log().attach(&region_->requests);
  published_counts_.fill(UINT64_MAX);  // nothing published yet
  published_queries_ = -1;
  cycle_started_ns_ = 0;
  next_section_ = 0;  // everything, starting at the next step
}

void StatsPublisher::detach(EngineCore& core) {
  before_idle(core);  // leaves the region complete, e.g. for a last look after the server stopped
  core.request_log().attach(nullptr);
}

void StatsPublisher::after_step(const EngineCore& core) {
  const int64_t now = monotonic_ns(core.last_forward_end());  // no clock read of our own
  if (next_section_ < 0) {
    if (now - cycle_started_ns_ < int64_t(ZL_STATS_PUBLISH_PERIOD_NS)) return;
    cycle_started_ns_ = now;
    next_section_ = 0;
  }
  publish_section(core, next_section_, now);
  if (++next_section_ == kNumSections) next_section_ = -1;
}

void StatsPublisher::before_idle(const EngineCore& core) {
  const int64_t now = monotonic_ns(std::chrono::steady_clock::now());
  for (int i = 0; i < kNumSections; ++i) publish_section(core, i, now);
  next_section_ = -1;
  cycle_started_ns_ = now;
}

void StatsPublisher::publish_section(const EngineCore& core, int index, int64_t now_ns) {
  if (index == 0) return publish_counters(core, now_ns);
  if (index == kNumSections - 1) return publish_signatures(core, now_ns);
  const int id = index - 1;
  const Histogram& h = core.metrics().histogram(id);
  if (h.count() == published_counts_[size_t(id)]) return;
  published_counts_[size_t(id)] = h.count();
  write_histogram_section(region_->histograms[id], h, now_ns);
}

void StatsPublisher::publish_counters(const EngineCore& core, int64_t now_ns) {
  zl_stats_counters& out = region_->counters;
  const EngineMetrics& m = core.metrics();
  const KvPoolStats kv = core.pool().stats();
  const SignatureStats& signatures = core.pool().signature_stats();
  zl_stats_counters c = out;  // staged, then stored word by word (core/seqlock.h)
  c.lock.publish_ns = uint64_t(now_ns);
  c.num_running = core.num_running();
  c.num_waiting = core.num_waiting();
  c.num_steps = m.num_steps();
  std::memcpy(c.num_finished_by_reason, m.num_finished_by_reason, sizeof(c.num_finished_by_reason));
  c.num_preemptions = m.num_preemptions;
  c.prompt_tokens_total = m.prompt_tokens_total;
  c.generation_tokens_total = m.generation_tokens_total;
  c.kv_num_blocks = kv.num_blocks;
  c.kv_num_free_blocks = kv.num_free_blocks;
  c.kv_num_cached_blocks = kv.num_cached_blocks;
  c.kv_num_used_blocks = kv.num_used_blocks;
  c.kv_num_live_signatures = kv.num_live_signatures;
  c.kv_internal_fragmentation = kv.internal_fragmentation;
  c.kv_reserved_ahead = kv.reserved_ahead;
  c.kv_external_fragmentation = kv.external_fragmentation;
  c.prefix_query_tokens = kv.prefix_query_tokens;
  c.prefix_hit_tokens = kv.prefix_hit_tokens;
  c.prefix_num_queries = signatures.num_queries();
  c.prefix_num_hits = signatures.num_hits();
  c.kv_num_evictions = kv.num_evictions;
  c.kv_num_compactions = kv.num_compactions;
  c.kv_num_block_moves = kv.num_block_moves;
  c.num_requests_traced = m.request_log.num_traced();
  constexpr size_t kSkip = sizeof(c.lock.sequence);  // owned by the seqlock
  seqlock_write_begin(out.lock.sequence);
  seqlock_store(&out.lock.publish_ns, &c.lock.publish_ns, sizeof(c) - kSkip);
  seqlock_write_end(out.lock.sequence);
}

void write_histogram_section(zl_stats_histogram& out, const Histogram& h, int64_t now_ns) {
  const uint64_t head[] = {uint64_t(now_ns), h.count(), h.sum(), h.max()};  // publish_ns, count, sum, max
  static_assert(offsetof(zl_stats_histogram, max) - offsetof(zl_stats_histogram, lock.publish_ns) == 3 * 8);
  seqlock_write_begin(out.lock.sequence);
  seqlock_store(&out.lock.publish_ns, head, sizeof(head));
  // Only the buckets in use: that range only grows, and the rest stay 0 as formatted.
  const int first = h.first_used_bucket(), last = h.last_used_bucket();
  if (first <= last)
    seqlock_store(&out.buckets[first], &h.buckets()[size_t(first)], size_t(last - first + 1) * sizeof(uint64_t));
  seqlock_write_end(out.lock.sequence);
}

void StatsPublisher::publish_signatures(const EngineCore& core, int64_t now_ns) {
  const SignatureStats& stats = core.pool().signature_stats();
  if (stats.num_queries() == published_queries_) return;
  published_queries_ = stats.num_queries();
  zl_stats_signatures& out = region_->signatures;
  struct {
    uint64_t publish_ns;
    uint32_t num_entries, reserved0;
  } head{uint64_t(now_ns), static_cast<uint32_t>(stats.entries().size()), 0};
  static_assert(offsetof(zl_stats_signatures, entries) - offsetof(zl_stats_signatures, lock.publish_ns) == sizeof(head));
  seqlock_write_begin(out.lock.sequence);
  seqlock_store(&out.lock.publish_ns, &head, sizeof(head));
  seqlock_store(out.entries, stats.entries().data(), stats.entries().size_bytes());
  seqlock_write_end(out.lock.sequence);
}

}  // namespace zl
