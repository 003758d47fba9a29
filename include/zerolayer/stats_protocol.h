/* zerolayer stats region, version 1: the specification, as plain C.
 *
 * Where. Inside the shared-memory segment of zerolayer/shm_protocol.h, at
 * header.stats_offset (a multiple of 4096), header.stats_bytes long; both 0
 * when the server publishes no stats. A monitor maps just that range
 * read-only (mmap PROT_READ at the offset) and never writes to it, so any
 * number of local processes may watch without the server noticing.
 *
 * Layout (one zl_stats_region; every section's offset and size are also in
 * the header's section table, which a reader checks against this build):
 *   zl_stats_header            magic, version, sizes, section table
 *   zl_stats_config            the running configuration (written once)
 *   zl_stats_counters          counters and gauges
 *   zl_stats_histogram x ZL_STATS_NUM_HISTOGRAMS
 *   zl_stats_signatures        the most used block-signature chains
 *   zl_stats_request_ring      the last ZL_STATS_REQUEST_RING_SLOTS finished requests
 *
 * Writer: the engine thread alone. Seqlocks: each section, and each request
 * record, starts with a 64-bit `sequence` word, odd while the writer changes
 * that section and even when it is stable.
 *   writer: seq = s + 1 (relaxed); release fence; write; seq = s + 2 (release)
 *   reader: s1 = seq (acquire); odd: retry; copy the section out; acquire
 *           fence; s2 = seq (relaxed); the copy is good only if s1 == s2.
 * A good copy is then still untrusted: counts are checked against their
 * capacities and strings are terminated before use.
 *
 * When. The config at attach; a request record when the request's terminal
 * event has been handed to its transport; the other sections a piece at a
 * time (one section per engine step) in a cycle started at most every
 * ZL_STATS_PUBLISH_PERIOD_NS while the engine works, and every changed
 * section at once when the engine goes idle. Each carries its publish_ns.
 *
 * Time: CLOCK_MONOTONIC nanoseconds, comparable across processes on one machine.
 */
#ifndef ZEROLAYER_STATS_PROTOCOL_H_
#define ZEROLAYER_STATS_PROTOCOL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define ZL_STATS_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
extern "C" {
#else
#define ZL_STATS_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define ZL_STATS_MAGIC 0x31305354534c5aull /* "ZLSTS01" little-endian */
#define ZL_STATS_VERSION 1u

#define ZL_STATS_PUBLISH_PERIOD_NS 50000000ull /* 50 ms */
#define ZL_STATS_HISTOGRAM_SUB_BITS 4u
#define ZL_STATS_HISTOGRAM_BUCKETS 1024u       /* 64 << ZL_STATS_HISTOGRAM_SUB_BITS */
#define ZL_STATS_MAX_SIGNATURES 64u
#define ZL_STATS_REQUEST_RING_SLOTS 256u
#define ZL_STATS_MAX_PREFILL_CHUNKS 8u
#define ZL_STATS_MAX_DECODE_STEPS 64u

/* Histograms, by index into zl_stats_region.histograms. */
enum zl_stats_histogram_id {
  ZL_STATS_HIST_SCHED_GAP_NS = 0,     /* host time between two forward passes, per step */
  ZL_STATS_HIST_BATCH_SEQS = 1,       /* sequences per step */
  ZL_STATS_HIST_BATCH_TOKENS = 2,     /* tokens per step */
  ZL_STATS_HIST_TTFT_NS = 3,          /* submit -> first token */
  ZL_STATS_HIST_INTER_TOKEN_NS = 4,   /* between consecutive tokens of a request */
  ZL_STATS_HIST_E2E_NS = 5,           /* submit -> terminal event */
  ZL_STATS_HIST_QUEUE_NS = 6,         /* submit -> admitted (vLLM's request_queue_time) */
  ZL_STATS_HIST_PREFILL_NS = 7,       /* admitted -> prompt computed */
  ZL_STATS_HIST_DECODE_NS = 8,        /* first token -> terminal event */
  ZL_STATS_HIST_PROMPT_TOKENS = 9,    /* per finished request */
  ZL_STATS_HIST_GENERATION_TOKENS = 10,
  /* The request phases of zl_stats_request, over finished requests: */
  ZL_STATS_HIST_PHASE_TRANSPORT_IN_NS = 11,
  ZL_STATS_HIST_PHASE_ADMISSION_NS = 12,
  ZL_STATS_HIST_PHASE_QUEUE_NS = 13,  /* waiting for capacity; 0 while capacity remains */
  ZL_STATS_HIST_PHASE_TRANSPORT_OUT_NS = 14,
  ZL_STATS_HIST_PHASE_TOTAL_NS = 15,  /* client send (or submit) -> terminal event delivered */
  ZL_STATS_NUM_HISTOGRAMS = 16
};

enum zl_stats_transport {
  ZL_STATS_TRANSPORT_IN_PROCESS = 0,
  ZL_STATS_TRANSPORT_HTTP = 1,
  ZL_STATS_TRANSPORT_SHM = 2,
};

typedef struct zl_stats_section {
  uint64_t offset;                /* bytes from the region's start */
  uint64_t bytes;
} zl_stats_section;

typedef struct zl_stats_header {
  uint64_t magic;                 /* ZL_STATS_MAGIC, stored last when the region is formatted (release) (atomic) */
  uint32_t version;               /* ZL_STATS_VERSION */
  uint32_t header_bytes;          /* sizeof(zl_stats_header) */
  uint64_t total_bytes;           /* the region's size, >= sizeof(zl_stats_region) */
  uint32_t num_histograms;        /* ZL_STATS_NUM_HISTOGRAMS */
  uint32_t histogram_buckets;     /* ZL_STATS_HISTOGRAM_BUCKETS */
  uint32_t histogram_sub_bits;    /* ZL_STATS_HISTOGRAM_SUB_BITS */
  uint32_t max_signatures;        /* ZL_STATS_MAX_SIGNATURES */
  uint32_t request_ring_slots;    /* ZL_STATS_REQUEST_RING_SLOTS */
  uint32_t max_prefill_chunks;    /* ZL_STATS_MAX_PREFILL_CHUNKS */
  uint32_t max_decode_steps;      /* ZL_STATS_MAX_DECODE_STEPS */
  uint32_t reserved0;
  zl_stats_section config;
  zl_stats_section counters;
  zl_stats_section signatures;
  zl_stats_section requests;
  zl_stats_section histograms[ZL_STATS_NUM_HISTOGRAMS];
  uint8_t pad[512 - 120 - 16 * ZL_STATS_NUM_HISTOGRAMS];
} zl_stats_header;

/* Every section starts like this. */
typedef struct zl_stats_seqlock {
  uint64_t sequence;              /* odd while being written (atomic) */
  uint64_t publish_ns;            /* when this version was written */
} zl_stats_seqlock;

typedef struct zl_stats_config {
  zl_stats_seqlock lock;
  char model[256];                /* the model spec as given, NUL-terminated */
  char cache_policy[16];          /* contiguous, paged or hybrid */
  char weight_format[32];         /* as loaded: auto, f16, bf16, q8_0, ... */
  int32_t server_pid;
  int32_t vocab_size;
  int32_t max_seq_len;
  int32_t max_num_seqs;
  int32_t max_num_batched_tokens;
  int32_t max_num_waiting;
  int32_t block_size;             /* tokens per KV block */
  int32_t num_kv_blocks;
  int32_t kv_capacity_tokens;
  int32_t num_threads;            /* compute threads */
  uint64_t start_ns;              /* when the engine attached this region */
  char device[16];                /* cpu or cuda:N, NUL-terminated (empty from writers that predate it) */
  uint8_t pad[512 - 16 - 304 - 40 - 8 - 16];
} zl_stats_config;

typedef struct zl_stats_counters {
  zl_stats_seqlock lock;
  int32_t num_running;            /* gauges */
  int32_t num_waiting;
  int64_t num_steps;              /* counters from here on, since the engine started */
  int64_t num_finished_by_reason[4]; /* by zl_shm_finish_reason: stop, length, aborted, error */
  int64_t num_preemptions;
  int64_t prompt_tokens_total;
  int64_t generation_tokens_total;
  int32_t kv_num_blocks;          /* KV pool gauges */
  int32_t kv_num_free_blocks;     /* unsigned, refcount 0 */
  int32_t kv_num_cached_blocks;   /* signed, refcount 0: reusable, evictable */
  int32_t kv_num_used_blocks;     /* refcount > 0 */
  int32_t kv_num_live_signatures; /* in the prefix index */
  int32_t reserved0;
  double kv_internal_fragmentation; /* slots held that their sequence can never use / all slots */
  double kv_reserved_ahead;       /* slots held for tokens not computed yet / all slots */
  double kv_external_fragmentation; /* free-or-cached blocks idle for lack of a long enough run / all blocks */
  int64_t prefix_query_tokens;    /* prompt tokens of admitted sequences */
  int64_t prefix_hit_tokens;      /* of which served from the prefix cache */
  int64_t prefix_num_queries;     /* admissions */
  int64_t prefix_num_hits;        /* admissions that reused at least one cached block */
  int64_t kv_num_evictions;
  int64_t kv_num_compactions;
  int64_t kv_num_block_moves;
  int64_t num_requests_traced;    /* records written to the request ring */
  uint8_t pad[256 - 16 - 8 - 8 - 32 - 24 - 24 - 24 - 64];
} zl_stats_counters;

/* Bucket b holds values v with bucket_of(v) == b, where for
 * S = ZL_STATS_HISTOGRAM_SUB_BITS: v < 2^S -> b = v; otherwise, with
 * L = floor(log2 v), b = ((L - S + 1) << S) + ((v >> (L - S)) & (2^S - 1)).
 * Values beyond the last bucket count in it. About 6% resolution. */
typedef struct zl_stats_histogram {
  zl_stats_seqlock lock;
  uint64_t count;
  uint64_t sum;
  uint64_t max;
  uint64_t reserved0;
  uint64_t buckets[ZL_STATS_HISTOGRAM_BUCKETS];
} zl_stats_histogram;

/* One prefix chain that admissions reused: the signatures of its first and
 * last blocks (low, high; little-endian) name it, as kv_pool.h defines them.
 * The table is Space-Saving's (Metwally et al.): a chain not in a full table
 * replaces the least hit entry and inherits its hits as `error`, so hits is
 * an upper bound and hits - error a lower one. */
typedef struct zl_stats_signature {
  uint8_t root[16];               /* the chain's first block */
  uint8_t signature[16];          /* its last block: names the whole prefix */
  int32_t num_blocks;             /* chain length */
  int32_t num_tokens;             /* tokens it covers */
  uint64_t hits;                  /* admissions that reused exactly this chain */
  uint64_t error;
  uint64_t tokens_saved;          /* prompt tokens not computed thanks to it */
  uint64_t last_hit;              /* prefix_num_queries at its last hit (larger: more recent) */
} zl_stats_signature;

typedef struct zl_stats_signatures {
  zl_stats_seqlock lock;
  uint32_t num_entries;           /* <= ZL_STATS_MAX_SIGNATURES; unsorted */
  uint32_t reserved0;
  zl_stats_signature entries[ZL_STATS_MAX_SIGNATURES];
} zl_stats_signatures;

typedef struct zl_stats_chunk {
  int32_t num_tokens;
  uint32_t reserved0;
  uint64_t ns;
} zl_stats_chunk;

/* One finished request. Its phases tile [start, delivered_ns] exactly, start
 * being sent_ns when the client gave it, else submitted_ns:
 *   transport_in   client send -> engine submit (reader thread, validation, tokenizing)
 *   admission      submit -> admitted, less queue (inbox, waiting for the step to end)
 *   queue          waiting for capacity (a slot or KV memory), and for
 *                  readmission after a preemption; 0 when admitted at once
 *   prefill        admission -> first token sampled, one chunk per step it ran in
 *   decode         first token -> terminal event: the engine steps after the one
 *                  that sampled its first token (a decoding request is in every step)
 *   other          what no phase above covers (an abort between steps)
 *   transport_out  terminal event -> handed to the transport (shm: in the client's ring)
 * Prefill chunks beyond ZL_STATS_MAX_PREFILL_CHUNKS add into the last entry;
 * decode_step_ns keeps the first ZL_STATS_MAX_DECODE_STEPS steps (of the
 * engine's last 4096), each from the end of the step before. */
typedef struct zl_stats_request {
  uint64_t sequence;              /* seqlock of this record (atomic) */
  uint64_t position;              /* the ring position it holds; a reader expecting another skips it */
  uint64_t request_id;            /* the engine's id */
  uint64_t client_tag;            /* the transport's id (shm: client_request_id); 0 if none */
  uint32_t transport;             /* zl_stats_transport */
  uint32_t finish_reason;         /* zl_shm_finish_reason */
  int32_t num_prompt_tokens;
  int32_t num_cached_prompt_tokens;
  int32_t num_generated_tokens;
  int32_t num_preemptions;
  uint64_t sent_ns;               /* client's send time; 0: unknown */
  uint64_t submitted_ns;
  uint64_t finished_ns;
  uint64_t delivered_ns;
  uint64_t transport_in_ns;       /* phases, ns */
  uint64_t admission_ns;
  uint64_t queue_ns;
  uint64_t prefill_ns;
  uint64_t decode_ns;
  uint64_t other_ns;
  uint64_t transport_out_ns;
  uint32_t num_prefill_chunks;
  uint32_t num_decode_steps;
  uint64_t decode_step_max_ns;
  zl_stats_chunk prefill_chunks[ZL_STATS_MAX_PREFILL_CHUNKS];
  uint32_t decode_step_ns[ZL_STATS_MAX_DECODE_STEPS]; /* saturate at UINT32_MAX */
  uint8_t pad[576 - 160 - 128 - 256];
} zl_stats_request;

typedef struct zl_stats_request_ring {
  uint64_t next_position;         /* records written so far; position p is in records[p % slots] (atomic) */
  uint8_t pad[56];
  zl_stats_request records[ZL_STATS_REQUEST_RING_SLOTS];
} zl_stats_request_ring;

typedef struct zl_stats_region {
  zl_stats_header header;
  zl_stats_config config;
  zl_stats_counters counters;
  zl_stats_histogram histograms[ZL_STATS_NUM_HISTOGRAMS];
  zl_stats_signatures signatures;
  zl_stats_request_ring requests;
} zl_stats_region;

/* Bytes a segment reserves for the region (whole pages). */
#define ZL_STATS_REGION_BYTES ((sizeof(zl_stats_region) + 4095u) / 4096u * 4096u)

ZL_STATS_STATIC_ASSERT(sizeof(zl_stats_header) == 512, "stats header size");
ZL_STATS_STATIC_ASSERT(offsetof(zl_stats_header, config) == 56, "stats header fields");
ZL_STATS_STATIC_ASSERT(sizeof(zl_stats_config) == 512, "stats config size");
ZL_STATS_STATIC_ASSERT(sizeof(zl_stats_counters) == 256, "stats counters size");
ZL_STATS_STATIC_ASSERT(sizeof(zl_stats_histogram) == 48 + 8 * ZL_STATS_HISTOGRAM_BUCKETS, "stats histogram size");
ZL_STATS_STATIC_ASSERT(sizeof(zl_stats_signature) == 72, "stats signature size");
ZL_STATS_STATIC_ASSERT(sizeof(zl_stats_request) == 576, "stats request size");
ZL_STATS_STATIC_ASSERT(offsetof(zl_stats_request_ring, records) == 64, "stats ring header");

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* ZEROLAYER_STATS_PROTOCOL_H_ */
