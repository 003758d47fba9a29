/* zerolayer shared-memory client, C API (libzerolayer_client.so / .a).
 *
 *   zl_client* c;
 *   if (zl_client_connect("/zerolayer-8000", &c) != ZL_OK) ...;
 *   zl_request req; zl_request_init(&req);
 *   req.prompt_text = "Hello"; req.prompt_text_bytes = 5; req.max_new_tokens = 16;
 *   uint64_t id; zl_client_submit(c, &req, &id);
 *   zl_event ev;
 *   while (zl_client_next_event(c, &ev, 1000) == ZL_OK && !zl_event_is_terminal(&ev)) ...;
 *   zl_client_close(c);
 *
 * A zl_client is one claimed client slot (one response ring) and must be used
 * by one thread at a time; open one per thread for concurrency. It keeps a
 * heartbeat thread so the server can tell it is alive. Every call returns a
 * ZL_* code; zl_client_last_error() says what went wrong. Waiting calls spin
 * briefly, then sleep on a futex, and fail with ZL_ERR_SERVER_DEAD within
 * about 1 s of the server dying (pid gone, heartbeat stale, or stopped):
 * they never hang. Records are laid out as zerolayer/shm_protocol.h says.
 */
#ifndef ZEROLAYER_CLIENT_H_
#define ZEROLAYER_CLIENT_H_

#include <stdint.h>

#include "zerolayer/shm_protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ZL_CLIENT_API __attribute__((visibility("default")))
#else
#define ZL_CLIENT_API
#endif

enum zl_client_status {
  ZL_OK = 0,
  ZL_ERR_INVALID = -1,      /* a bad argument (the message names it) */
  ZL_ERR_NOT_FOUND = -2,    /* no segment of that name */
  ZL_ERR_NO_SLOT = -3,      /* every client slot is taken */
  ZL_ERR_SERVER_DEAD = -4,  /* the server stopped or died */
  ZL_ERR_TIMEOUT = -5,      /* nothing arrived within timeout_ms */
  ZL_ERR_FULL = -6,         /* the request ring stayed full */
  ZL_ERR_PROTOCOL = -7,     /* the segment is not a compatible zerolayer segment */
  ZL_ERR_LOST = -8,         /* the server took this client for dead and dropped the record */
};

typedef struct zl_client zl_client;

/* One chat message; role is a zl_shm_chat_role (ZL_SHM_ROLE_USER, ...). */
typedef struct zl_chat_message {
  uint32_t role;
  const char* content;              /* UTF-8, content_bytes long */
  uint32_t content_bytes;
} zl_chat_message;

typedef struct zl_request {
  const int32_t* prompt_ids;        /* either token ids... */
  uint32_t num_prompt_ids;
  const char* prompt_text;          /* ...or UTF-8 text (used when prompt_ids is NULL)... */
  uint32_t prompt_text_bytes;
  zl_shm_sampling sampling;         /* zl_request_init: temperature 1, top_p 1, repetition_penalty 1 */
  int32_t max_new_tokens;           /* default 256 */
  int32_t priority;
  float min_token_prob;
  int32_t ignore_eos;               /* 0 or 1 */
  const char* const* stop;          /* num_stop NUL-terminated strings */
  uint32_t num_stop;
  const int32_t* stop_token_ids;
  uint32_t num_stop_token_ids;
  const char* cache_salt;           /* NUL-terminated, or NULL */
  const uint8_t* signature;         /* 16 bytes (first block's cache signature), or NULL */
  const zl_chat_message* messages;  /* ...or chat messages, rendered by the server through the model's */
  uint32_t num_messages;            /* chat template (used when prompt_ids and prompt_text are NULL) */
  uint32_t structured_kind;         /* zl_shm_structured_kind: the output's language; 0: free text */
  const char* structured_spec;      /* its spec (zerolayer/shm_protocol.h), structured_spec_bytes of UTF-8 */
  uint32_t structured_spec_bytes;
  const zl_shm_logit_bias* logit_bias; /* OpenAI's logit_bias: num_logit_bias {id, bias} entries, or NULL */
  uint32_t num_logit_bias;
  int32_t keep_special_tokens;      /* 1: special tokens are text too (vLLM's skip_special_tokens false) */
} zl_request;

/* One response record, copied out of the ring, plus when it was read. */
typedef struct zl_event {
  zl_shm_response record;           /* kind, client_request_id, token, text, finish fields */
  uint64_t read_ns;                 /* CLOCK_MONOTONIC when the client read it */
} zl_event;

typedef int (*zl_event_callback)(const zl_event* event, void* user); /* nonzero: stop (and cancel) */

ZL_CLIENT_API void zl_request_init(zl_request* request);
ZL_CLIENT_API int zl_client_connect(const char* name, zl_client** out);
/* Writes one SUBMIT record; *id is the client request id its events carry. */
ZL_CLIENT_API int zl_client_submit(zl_client* client, const zl_request* request, uint64_t* id);
/* The next event of any of this client's requests. timeout_ms < 0: no limit
 * (still fails when the server dies). */
ZL_CLIENT_API int zl_client_next_event(zl_client* client, zl_event* event, int timeout_ms);
/* Submits and calls `callback` for each of this request's events up to and
 * including its terminal one; events of other requests are passed too. */
ZL_CLIENT_API int zl_client_stream(zl_client* client, const zl_request* request, zl_event_callback callback,
                                   void* user, int timeout_ms);
ZL_CLIENT_API int zl_client_cancel(zl_client* client, uint64_t id);
/* Frees the slot (the server aborts what is still in flight) and unmaps. */
ZL_CLIENT_API void zl_client_close(zl_client* client);
/* The last error of `client`, or with NULL the last zl_client_connect error of this thread. */
ZL_CLIENT_API const char* zl_client_last_error(const zl_client* client);
/* How long next_event spins before sleeping on the futex (default 20 us)
 * while it has no stream interval to go by (the first event of a request).
 * Spinning costs a core; it buys the lowest latency when events come faster
 * than a futex wake-up (5 us on an idle core, a time slice on a busy one). */
ZL_CLIENT_API void zl_client_set_spin_us(zl_client* client, uint32_t spin_us);
/* Adaptive spinning (default 250 us, 0: off). Within a stream, next_event
 * learns the interval between records (from their sink_ns) and spins until
 * the next one is due (about two mean intervals after the last) when that is
 * within max_us, so each token is read a cache-line hand-over after it was
 * written; when it is due later, it spins only 2 us (for records the server
 * writes back to back) and sleeps. A spin that finds itself descheduled (more
 * runnable threads than cores, where spinning only slows the engine and gets
 * the spinner descheduled for whole time slices while its tokens queue up)
 * sleeps at once and stops adaptive spinning for 100 ms, doubling per repeat
 * up to 10 s, halving after 256 undisturbed spins; nor does it spin through
 * intervals while more threads are runnable than there are CPUs (sampled
 * from /proc/loadavg every 100 ms). With 0, every wait spins spin_us, then
 * sleeps. */
ZL_CLIENT_API void zl_client_set_adaptive_spin_us(zl_client* client, uint32_t max_us);
/* How next_event's waits ended since connect: where a token's latency came from. */
typedef struct zl_client_wait_stats {
  uint64_t num_events;              /* records read */
  uint64_t num_woken_events;        /* ...of which after sleeping on the futex (a wake-up's latency) */
  uint64_t num_sleeps;              /* futex sleeps (ended by a wake-up or a 100 ms liveness timeout) */
  uint64_t num_preempted_spins;     /* spins found descheduled (they back off adaptive spinning) */
} zl_client_wait_stats;
ZL_CLIENT_API void zl_client_get_wait_stats(const zl_client* client, zl_client_wait_stats* out);
ZL_CLIENT_API const char* zl_status_name(int status);
ZL_CLIENT_API int zl_event_is_terminal(const zl_event* event);

/* For tests and other bindings: the slot index and generation records must
 * carry, and a raw record copied into the request ring as is (payload
 * clamped to the record). */
ZL_CLIENT_API uint32_t zl_client_slot(const zl_client* client);
ZL_CLIENT_API uint64_t zl_client_generation(const zl_client* client);
ZL_CLIENT_API int zl_client_submit_raw(zl_client* client, const zl_shm_request* record);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* ZEROLAYER_CLIENT_H_ */
