/* zerolayer shared-memory protocol, version 3: the specification, as plain C.
 * (Version 2 added a request's structured output: structured_kind and
 * structured_bytes, the spec in the payload. Version 3 added logit_bias
 * (num_logit_bias pairs last in the payload), keep_special_tokens, and the
 * stop id that ended a request in its FINISH record's token.)
 *
 * One POSIX shared-memory segment (shm_open name, default "/zerolayer-<port>",
 * created by the server with O_CREAT|O_EXCL and mode 0600) holds, in order:
 *
 *   [zl_shm_header]                 4096 bytes at offset 0
 *   [zl_shm_client  x num_clients]  client-slot table, 256 bytes each
 *   [zl_shm_request_slot x request_ring_slots]   the request ring
 *   [zl_shm_response_slot x response_ring_slots] x num_clients: one response ring per client
 *   [zl_stats_region]               stats_bytes at stats_offset (zerolayer/stats_protocol.h)
 *
 * Every offset, count and size is written in the header by the server; a
 * client must read them from there (and check them against total_bytes and
 * the record sizes below) rather than assume the defaults.
 *
 * Rings. Both ring kinds are D. Vyukov's bounded queue with a sequence number
 * per slot. For a ring of N slots (a power of two), the slot for position p
 * is slots[p & (N-1)], and its `sequence` says whose turn it is:
 *   sequence == p        free for the producer that claims position p
 *   sequence == p + 1    published: the consumer may read position p
 *   sequence == p + N    consumed: free for position p + N (next lap)
 * A producer reads enqueue_pos, checks sequence == pos, claims pos with a CAS
 * enqueue_pos: pos -> pos+1, fills the record, then publishes with a CAS
 * sequence: pos -> pos+1 (a CAS, not a store: see "crashed producers").
 * Producers never wait for each other: a loser of the CAS retries at the new
 * position. sequence < pos means the ring is full.
 *
 * Request ring: many producers (clients), one consumer (the server's reader
 * thread). enqueue_pos lives in the header; dequeue_pos is the server's.
 * Response rings: producers are the server only (the engine's output stage writes
 * token/finish records, the reader thread writes error records, both CAS a
 * server-private enqueue position); the consumer is the owning client.
 *
 * Crashed producers. A client that dies between claiming a request position
 * and publishing it would stop the consumer forever. So before each claim a
 * client stores pending_request_pos = pos + 1 in its own client slot and
 * clears it (0) after publishing. When the reader has found position p
 * claimed (enqueue_pos > p) but unpublished for 50 ms, it looks for an active
 * client whose pending_request_pos == p + 1: if there is one it keeps waiting
 * (that client is alive; if it hangs, its heartbeat goes stale within 1 s and
 * it is declared dead); if there is none, the claimer is dead, and the
 * reader skips p by setting sequence = p + N. A producer that was merely
 * frozen for over a second and then resumes finds its publish CAS failing
 * (sequence is no longer p) and reports the request as dropped; the bytes it
 * may have written into a reused slot are caught by the server's validation.
 *
 * Wake-ups are spin-then-futex (shared, not private, futexes on the 32-bit
 * words below). A consumer about to sleep reads *_futex, sets its *_sleeping
 * word to 1, re-checks the ring, then FUTEX_WAITs on the *_futex word for the
 * value it read (with a timeout of at most 100 ms, so that it can check its
 * peer is alive), and stores 0 in *_sleeping when it wakes. A producer that
 * published and sees *_sleeping == 1 takes it to 0 with an atomic exchange;
 * if that returned 1, it increments *_futex and FUTEX_WAKEs it. So a sleep
 * costs the producers one syscall however many records they publish before
 * the consumer runs, and no syscall at all while the consumer spins. (A
 * producer that wakes on seeing 1 without the exchange is correct too, only
 * costlier.) How long a consumer spins is its own choice: the C client spins
 * through a stream's steady record interval when that is short (see
 * zl_client_set_adaptive_spin_us in zerolayer/client.h).
 *
 * Liveness. The server writes its pid and refreshes server_heartbeat_ns
 * (CLOCK_MONOTONIC, ns) at least every 100 ms; a client treats the server as
 * dead when kill(server_pid, 0) fails with ESRCH, when the heartbeat is more
 * than 1 s old, or when server_state is ZL_SHM_SERVER_STOPPED, and fails its
 * calls with an error instead of waiting. A client claims a slot with a CAS
 * of state FREE -> CLAIMING, writes pid and heartbeat_ns, then stores ACTIVE,
 * and refreshes heartbeat_ns at least every 100 ms. The server declares a
 * client dead on ESRCH or a heartbeat older than 1 s (or CLAIMING for over
 * 1 s), aborts its requests, waits for their terminal events, resets its
 * response ring, bumps generation and frees the slot, all within 1 s.
 *
 * Trust. Every client maps the whole segment read-write, so the server
 * treats all of it as hostile: it copies the geometry (offsets, counts,
 * sizes) into private memory when it creates the segment and never reads it
 * back; if a client changes the header's constant fields the server writes
 * them back within 100 ms, so that later clients can still connect; every
 * record is copied out of its slot before it is validated. The mode-0600
 * segment admits only the server's user. Within that user the protocol does
 * not isolate clients from each other: a process that writes arbitrary bytes
 * can also rewrite another client's slot state or response ring, so a
 * per-client secret in this segment would prove nothing. Nor would a
 * segment per client (a memfd handed over a Unix socket): a process of the
 * same user opens another's descriptors through /proc/PID/fd (a ptrace read
 * check, which Yama's ptrace_scope does not restrict) or attaches to it. The
 * boundary is the user id, as for vLLM's ZMQ IPC sockets: clients that must
 * not trust each other belong to different users, and reach one server over
 * HTTP with API keys or run servers of their own.
 *
 * Words marked (atomic) are accessed only with atomic operations (C11
 * atomics, std::atomic_ref, __atomic builtins); the others are plain data
 * made visible by the release/acquire on a ring's sequence.
 */
#ifndef ZEROLAYER_SHM_PROTOCOL_H_
#define ZEROLAYER_SHM_PROTOCOL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define ZL_SHM_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
extern "C" {
#else
#define ZL_SHM_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define ZL_SHM_MAGIC 0x31304d4853534c5aull /* "ZLSSHM01" little-endian */
#define ZL_SHM_VERSION 3u

/* Fixed limits (records are fixed-size; there is no separate
 * variable-length area: a request's prompt, stop strings and salt must fit
 * in its payload, so a prompt is at most ZL_SHM_REQUEST_PAYLOAD_BYTES bytes
 * of text or a quarter of that in token ids). */
#define ZL_SHM_HEADER_BYTES 4096u
#define ZL_SHM_CLIENT_BYTES 256u
#define ZL_SHM_REQUEST_SLOT_BYTES 16384u
#define ZL_SHM_RESPONSE_SLOT_BYTES 512u
#define ZL_SHM_MAX_STOP 16u              /* stop strings per request */
#define ZL_SHM_MAX_STOP_TOKEN_IDS 64u    /* extra stop token ids per request */
#define ZL_SHM_MAX_CACHE_SALT_BYTES 256u
#define ZL_SHM_MAX_LOGIT_BIAS 1024u      /* logit_bias entries per request */
#define ZL_SHM_MAX_TOP_LOGPROBS 20u      /* as zl::SamplingParams::num_top_logprobs */
#define ZL_SHM_DEFAULT_CLIENTS 64u
#define ZL_SHM_DEFAULT_REQUEST_SLOTS 256u

/* Timing contract (nanoseconds). */
#define ZL_SHM_HEARTBEAT_PERIOD_NS 100000000ull  /* both sides refresh at least this often */
#define ZL_SHM_DEAD_AFTER_NS 1000000000ull       /* a heartbeat older than this: peer is dead */

enum zl_shm_server_state {
  ZL_SHM_SERVER_STARTING = 0, /* header being written; do not connect yet */
  ZL_SHM_SERVER_RUNNING = 1,
  ZL_SHM_SERVER_STOPPED = 2   /* clean shutdown: pending calls fail at once */
};

enum zl_shm_client_state {
  ZL_SHM_CLIENT_FREE = 0,
  ZL_SHM_CLIENT_CLAIMING = 1, /* won the CAS, writing pid and heartbeat */
  ZL_SHM_CLIENT_ACTIVE = 2,
  ZL_SHM_CLIENT_CLOSING = 3,  /* client asked to leave, or server reclaiming a dead one */
};

typedef struct zl_shm_header {
  uint64_t magic;                 /* ZL_SHM_MAGIC, stored last at creation (release) (atomic) */
  uint32_t version;               /* ZL_SHM_VERSION */
  uint32_t header_bytes;          /* ZL_SHM_HEADER_BYTES */
  uint64_t total_bytes;           /* the segment's size; every region lies inside */
  uint64_t client_table_offset;   /* bytes from the segment start */
  uint32_t num_clients;           /* client slots (and response rings) */
  uint32_t client_bytes;          /* ZL_SHM_CLIENT_BYTES */
  uint64_t request_ring_offset;
  uint32_t request_ring_slots;    /* power of two */
  uint32_t request_slot_bytes;    /* ZL_SHM_REQUEST_SLOT_BYTES */
  uint64_t response_rings_offset; /* ring of client i at response_rings_offset + i * response_ring_bytes */
  uint64_t response_ring_bytes;   /* response_ring_slots * response_slot_bytes */
  uint32_t response_ring_slots;   /* power of two */
  uint32_t response_slot_bytes;   /* ZL_SHM_RESPONSE_SLOT_BYTES */
  int32_t server_pid;
  uint32_t server_state;          /* zl_shm_server_state (atomic) */
  uint64_t server_heartbeat_ns;   /* CLOCK_MONOTONIC (atomic) */
  uint64_t server_start_ns;       /* CLOCK_MONOTONIC at creation */
  int32_t vocab_size;             /* token ids must be in [0, vocab_size) */
  int32_t max_seq_len;            /* prompt + max_new_tokens must fit */
  uint32_t max_inflight_per_client; /* submits beyond this get an error record */
  uint32_t reserved0;
  uint64_t stats_offset;          /* the stats region (zerolayer/stats_protocol.h), page-aligned; */
  uint64_t stats_bytes;           /*   both 0: none. Monitors map it read-only; clients may ignore it */
  uint8_t pad0[256 - 136];
  /* Request-ring control, one cache line each to keep producers and the
   * consumer off each other's lines. */
  uint64_t request_enqueue_pos;   /* producers CAS (atomic) */
  uint8_t pad1[56];
  uint64_t request_dequeue_pos;   /* server only; informative for clients (atomic) */
  uint8_t pad2[56];
  uint32_t request_futex;         /* bumped by a producer that wakes the server (atomic) */
  uint32_t server_sleeping;       /* 1 while the reader may sleep on request_futex (atomic) */
  uint8_t pad3[ZL_SHM_HEADER_BYTES - 256 - 128 - 8];
} zl_shm_header;

typedef struct zl_shm_client {
  uint32_t state;                 /* zl_shm_client_state (atomic) */
  int32_t pid;                    /* written by the client after claiming */
  uint64_t heartbeat_ns;          /* CLOCK_MONOTONIC, by the client (atomic) */
  uint64_t generation;            /* bumped by the server each time the slot is freed (atomic) */
  uint64_t pending_request_pos;   /* request position being claimed + 1; 0: none (atomic) */
  uint8_t pad0[32];
  uint64_t response_dequeue_pos;  /* next position the client reads; client-owned (atomic) */
  uint8_t pad1[56];
  uint32_t response_futex;        /* bumped by the server to wake the client (atomic) */
  uint32_t client_sleeping;       /* 1 while the client may sleep on response_futex (atomic) */
  uint64_t num_dropped;           /* response records the server could not deliver (atomic) */
  uint8_t pad2[ZL_SHM_CLIENT_BYTES - 144];
} zl_shm_client;

enum zl_shm_request_kind {
  ZL_SHM_REQUEST_SUBMIT = 1,
  ZL_SHM_REQUEST_CANCEL = 2,      /* aborts client_request_id; its terminal record follows */
  ZL_SHM_REQUEST_PROMPT_PART = 3, /* the first bytes of a prompt too long for one record: see below */
};

/* Long prompts. A prompt whose bytes (ids x 4, text or chat bytes) do not fit
 * one record beside the request's other payload is sent as PROMPT_PART records
 * and then the SUBMIT, all with the same client_request_id, back to back from
 * one client (records of one client reach the server in order). A part's
 * payload (payload_bytes > 0) is the next slice of the prompt's bytes; its
 * prompt_kind must be the SUBMIT's; its other fields are ignored. The SUBMIT
 * says prompt_bytes_in_parts (the parts' total) and its payload holds the
 * rest of the prompt, then the usual stop ids, stop strings and salt. Parts
 * answer nothing themselves: any problem with them (too long, a kind that
 * changes, a total that disagrees) is the SUBMIT's one ERROR record. A
 * prompt may take at most max_seq_len x 4 bytes of ids, or x 32 of text. */

enum zl_shm_prompt_kind {
  ZL_SHM_PROMPT_TOKENS = 1,       /* prompt_count int32 token ids */
  ZL_SHM_PROMPT_TEXT = 2,         /* prompt_count bytes of UTF-8 */
  ZL_SHM_PROMPT_CHAT = 3,         /* prompt_count bytes of chat messages, rendered by the
                                     server through the model's chat template (with the
                                     generation prompt): each message is a uint32
                                     zl_shm_chat_role, a uint32 content length in bytes,
                                     then that many bytes of UTF-8 */
};

enum zl_shm_chat_role {
  ZL_SHM_ROLE_SYSTEM = 0,
  ZL_SHM_ROLE_USER = 1,
  ZL_SHM_ROLE_ASSISTANT = 2,
  ZL_SHM_ROLE_TOOL = 3,
};

/* A request's structured output, as zl::StructuredOutput::Kind: the engine
 * masks every token that cannot continue the spec's language. The spec is
 * structured_bytes of UTF-8, last in the payload; one that does not compile
 * is the SUBMIT's ERROR record, led by "structured_output". */
enum zl_shm_structured_kind {
  ZL_SHM_STRUCTURED_NONE = 0,
  ZL_SHM_STRUCTURED_JSON_OBJECT = 1, /* any JSON object; no spec */
  ZL_SHM_STRUCTURED_JSON_SCHEMA = 2, /* spec: a JSON schema */
  ZL_SHM_STRUCTURED_REGEX = 3,       /* spec: a regular expression the whole output matches */
  ZL_SHM_STRUCTURED_CHOICE = 4,      /* spec: a JSON list of strings, the output one of them */
  ZL_SHM_STRUCTURED_GRAMMAR = 5,     /* spec: an EBNF grammar, root rule "root" */
  ZL_SHM_STRUCTURED_TAG = 6,         /* spec: an xgrammar structural tag (JSON) */
};

/* The fields of zl::SamplingParams, same meanings and ranges. */
typedef struct zl_shm_sampling {
  float temperature;              /* 0: greedy; else (0, 100] */
  int32_t top_k;                  /* 0 or -1: off */
  float top_p;                    /* (0, 1] */
  float min_p;                    /* [0, 1] */
  float repetition_penalty;       /* (0, 10] */
  float presence_penalty;         /* [-2, 2] */
  float frequency_penalty;        /* [-2, 2] */
  uint32_t has_seed;              /* 0 or 1 */
  uint64_t seed;
  int32_t num_top_logprobs;       /* [0, ZL_SHM_MAX_TOP_LOGPROBS] */
  uint32_t reserved;              /* 0 */
} zl_shm_sampling;

/* OpenAI's logit_bias, one entry: `bias` in [-100, 100] added to token
 * `id`'s logit before sampling (logprobs stay the model's own). */
typedef struct zl_shm_logit_bias {
  int32_t id;                     /* in [0, vocabulary), each at most once */
  float bias;
} zl_shm_logit_bias;

/* Request payload layout, packed in this order, lengths from the fields:
 *   prompt (prompt_count int32 ids, or prompt_count bytes of text),
 *   stop token ids (num_stop_token_ids int32), stop strings (stop_bytes[i]
 *   bytes each, no terminators), cache salt (cache_salt_bytes), structured
 *   output spec (structured_bytes), logit bias (num_logit_bias
 *   zl_shm_logit_bias).
 * payload_bytes must equal the sum exactly. */
#define ZL_SHM_REQUEST_FIXED_BYTES 256u
#define ZL_SHM_REQUEST_PAYLOAD_BYTES (ZL_SHM_REQUEST_SLOT_BYTES - 8u - ZL_SHM_REQUEST_FIXED_BYTES)

typedef struct zl_shm_request {
  uint32_t kind;                  /* zl_shm_request_kind */
  uint32_t client_slot;           /* index into the client table: routes the responses */
  uint64_t client_request_id;     /* chosen by the client, echoed in every response */
  uint64_t client_generation;     /* the slot's generation when claimed; stale records are dropped */
  uint64_t submit_ns;             /* CLOCK_MONOTONIC when the client wrote the record; 0: unknown.
                                     Starts the request's latency breakdown (transport in), so it
                                     must not be later than the server's clock nor before
                                     server_start_ns */
  uint32_t prompt_kind;           /* zl_shm_prompt_kind */
  uint32_t prompt_count;          /* ids or bytes, > 0 */
  zl_shm_sampling sampling;       /* 48 bytes */
  int32_t max_new_tokens;         /* >= 1 */
  int32_t priority;               /* higher first */
  float min_token_prob;           /* [0, 1]; 0: off */
  uint32_t ignore_eos;            /* 0 or 1 */
  uint32_t num_stop;              /* <= ZL_SHM_MAX_STOP */
  uint32_t num_stop_token_ids;    /* <= ZL_SHM_MAX_STOP_TOKEN_IDS */
  uint32_t stop_bytes[ZL_SHM_MAX_STOP]; /* each in [1, 1024] for i < num_stop */
  uint32_t cache_salt_bytes;      /* <= ZL_SHM_MAX_CACHE_SALT_BYTES */
  uint32_t has_signature;         /* 0 or 1 */
  uint8_t signature[16];          /* first block's cache signature (low, high; little-endian), a hint */
  uint32_t payload_bytes;         /* <= ZL_SHM_REQUEST_PAYLOAD_BYTES */
  uint32_t prompt_bytes_in_parts; /* SUBMIT: prompt bytes sent before in PROMPT_PART records; 0: none */
  uint32_t structured_kind;       /* zl_shm_structured_kind */
  uint32_t structured_bytes;      /* the spec; 0 for NONE and JSON_OBJECT */
  uint32_t keep_special_tokens;   /* 0 or 1: special tokens are text too (vLLM's skip_special_tokens false) */
  uint32_t num_logit_bias;        /* <= ZL_SHM_MAX_LOGIT_BIAS entries, last in the payload */
  uint8_t pad[ZL_SHM_REQUEST_FIXED_BYTES - 224];
  uint8_t payload[ZL_SHM_REQUEST_PAYLOAD_BYTES];
} zl_shm_request;

typedef struct zl_shm_request_slot {
  uint64_t sequence;              /* see "Rings" (atomic) */
  zl_shm_request request;
} zl_shm_request_slot;

enum zl_shm_response_kind {
  ZL_SHM_RESPONSE_TOKEN = 1,      /* one sampled token and its text piece */
  ZL_SHM_RESPONSE_TEXT = 2,       /* more text of the same request (a piece longer than text[], or text flushed at the end) */
  ZL_SHM_RESPONSE_FINISH = 3,     /* terminal: finish reason, counts, timings; text = stop detail or error */
  ZL_SHM_RESPONSE_ERROR = 4,      /* terminal: rejected before it ran; text = message naming the field */
};

enum zl_shm_finish_reason {       /* as zl::FinishReason */
  ZL_SHM_FINISH_STOP = 0,
  ZL_SHM_FINISH_LENGTH = 1,
  ZL_SHM_FINISH_ABORTED = 2,
  ZL_SHM_FINISH_ERROR = 3,
};

typedef struct zl_shm_top_logprob {
  int32_t id;
  float logprob;
} zl_shm_top_logprob;

#define ZL_SHM_RESPONSE_TEXT_BYTES (ZL_SHM_RESPONSE_SLOT_BYTES - 8u - 256u)

/* Exactly one terminal record (FINISH or ERROR) per submitted request id.
 * The server reserves a slot for each request's terminal record, so a client
 * that stops reading loses token records (the request is then aborted and
 * finishes with reason ERROR, "response ring overflow") but never its end. */
typedef struct zl_shm_response {
  uint32_t kind;                  /* zl_shm_response_kind */
  uint32_t text_bytes;            /* <= ZL_SHM_RESPONSE_TEXT_BYTES */
  uint64_t client_request_id;
  uint64_t sink_ns;               /* CLOCK_MONOTONIC when the server wrote it */
  int32_t token;                  /* TOKEN: the id; FINISH: the stop id (eos or a stop token id) that
                                     ended it, else -1; else -1 */
  float logprob;                  /* TOKEN: log p under the raw distribution; 0 unless the request
                                     asked for num_top_logprobs > 0 (computing it costs a pass
                                     over the vocabulary on the engine thread) */
  uint32_t num_top_logprobs;      /* TOKEN: entries of top[] used */
  uint32_t finish_reason;         /* FINISH: zl_shm_finish_reason */
  int32_t num_prompt_tokens;      /* FINISH */
  int32_t num_cached_prompt_tokens;
  int32_t num_generated_tokens;
  int32_t num_preemptions;
  double queue_s;                 /* FINISH: seconds from submit, as zl::RequestTimings */
  double prefill_s;
  double first_token_s;
  double finish_s;
  uint32_t status_code;           /* ERROR: zl::StatusCode value */
  uint32_t flags;                 /* ZL_SHM_FLAG_* */
  zl_shm_top_logprob top[ZL_SHM_MAX_TOP_LOGPROBS];
  char text[ZL_SHM_RESPONSE_TEXT_BYTES]; /* UTF-8, not terminated */
} zl_shm_response;

#define ZL_SHM_FLAG_TOKENS_DROPPED 1u /* FINISH: some records were lost to a full ring */

typedef struct zl_shm_response_slot {
  uint64_t sequence;              /* see "Rings" (atomic) */
  zl_shm_response response;
} zl_shm_response_slot;

ZL_SHM_STATIC_ASSERT(sizeof(zl_shm_header) == ZL_SHM_HEADER_BYTES, "header size");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_header, stats_offset) == 120, "header fields");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_header, pad0) == 136, "header fields");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_header, request_enqueue_pos) == 256, "enqueue line");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_header, request_dequeue_pos) == 320, "dequeue line");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_header, request_futex) == 384, "futex line");
ZL_SHM_STATIC_ASSERT(sizeof(zl_shm_client) == ZL_SHM_CLIENT_BYTES, "client size");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_client, response_dequeue_pos) == 64, "client dequeue line");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_client, response_futex) == 128, "client futex line");
ZL_SHM_STATIC_ASSERT(sizeof(zl_shm_sampling) == 48, "sampling size");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_request, sampling) == 40, "request sampling");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_request, stop_bytes) == 112, "request stops");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_request, payload_bytes) == 200, "request payload_bytes");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_request, num_logit_bias) == 220, "request logit bias (version 3)");
ZL_SHM_STATIC_ASSERT(sizeof(zl_shm_logit_bias) == 8, "logit bias entry");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_request, payload) == ZL_SHM_REQUEST_FIXED_BYTES, "request payload");
ZL_SHM_STATIC_ASSERT(sizeof(zl_shm_request_slot) == ZL_SHM_REQUEST_SLOT_BYTES, "request slot size");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_response, top) == 96, "response top");
ZL_SHM_STATIC_ASSERT(offsetof(zl_shm_response, text) == 256, "response text");
ZL_SHM_STATIC_ASSERT(sizeof(zl_shm_response_slot) == ZL_SHM_RESPONSE_SLOT_BYTES, "response slot size");

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* ZEROLAYER_SHM_PROTOCOL_H_ */
