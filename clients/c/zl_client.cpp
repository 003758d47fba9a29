// The C client library: connect (map, check, claim a slot, start the
// heartbeat), write request records straight into the shared ring, read
// response records from this client's ring. Built from the header-only ring
// code in src/transport/shm_ring.h so that it does not link the engine.
#include "zerolayer/client.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include "transport/shm_ring.h"
#include "transport/spin_policy.h"

namespace {

using zl::shm::atomic;
using zl::shm::now_ns;
using zl::shm::SpinPolicy;

constexpr uint64_t kSleepSliceNs = 100'000'000;    // futex timeout: liveness checks in between
constexpr uint64_t kCheckServerNs = 10'000'000;     // waits check the server's liveness this often (a kill())
constexpr uint64_t kCheckCpusNs = 100'000'000;      // adaptive spinning looks at /proc/loadavg this often
constexpr uint64_t kRingFullWaitNs = 5'000'000'000ull;

thread_local std::string g_connect_error;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

struct zl_client {
  void* base = nullptr;
  uint64_t bytes = 0;
  zl::shm::Layout layout;
  uint32_t slot = 0;
  uint64_t generation = 0;
  uint64_t next_id = 1;
  uint64_t dequeue_pos = 0;
  zl::shm::SpinPolicy spin;        // zl_client_set_spin_us, zl_client_set_adaptive_spin_us
  zl_client_wait_stats wait_stats{};
  uint64_t server_checked_ns = 0;  // when a wait last ran check_server()
  uint64_t cpus_checked_ns = 0;    // when a wait last sampled the runnable threads
  int num_cpus = 1;                // this process may run on
  std::string error;
  std::atomic<bool> stop{false};
  std::thread heartbeat;

  zl_shm_header& header() const { return layout.header(); }
  zl_shm_client& me() const { return layout.client(slot); }

  int fail(int status, std::string message) {
    error = std::move(message);
    return status;
  }
  // ZL_OK while the server lives; checked whenever a wait runs long.
  int check_server() {
    zl_shm_header& h = header();
    if (atomic(h.server_state).load(std::memory_order_acquire) == ZL_SHM_SERVER_STOPPED)
      return fail(ZL_ERR_SERVER_DEAD, "the server stopped");
    if (kill(layout.server_pid(), 0) != 0 && errno == ESRCH)
      return fail(ZL_ERR_SERVER_DEAD, "the server process " + std::to_string(layout.server_pid()) + " is gone");
    uint64_t beat = atomic(h.server_heartbeat_ns).load(std::memory_order_acquire);
    if (int64_t(now_ns() - beat) > int64_t(ZL_SHM_DEAD_AFTER_NS))
      return fail(ZL_ERR_SERVER_DEAD, "the server's heartbeat is over 1 s old");
    if (atomic(me().state).load(std::memory_order_acquire) != ZL_SHM_CLIENT_ACTIVE ||
        atomic(me().generation).load() != generation)
      return fail(ZL_ERR_LOST, "the server reclaimed this client's slot (took it for dead)");
    return ZL_OK;
  }
};

namespace {

int map_segment(const char* name, zl_client* c) {
  int fd = shm_open(name, O_RDWR, 0);
  if (fd < 0) {
    g_connect_error = std::string("shm_open(") + name + "): " + std::strerror(errno);
    return errno == ENOENT ? ZL_ERR_NOT_FOUND : ZL_ERR_INVALID;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || uint64_t(st.st_size) < sizeof(zl_shm_header)) {
    close(fd);
    g_connect_error = std::string(name) + " is too small to be a zerolayer segment";
    return ZL_ERR_PROTOCOL;
  }
  void* base = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    g_connect_error = std::string("mmap(") + name + "): " + std::strerror(errno);
    return ZL_ERR_INVALID;
  }
  c->base = base;
  c->bytes = uint64_t(st.st_size);
  if (atomic(static_cast<zl_shm_header*>(base)->magic).load(std::memory_order_acquire) != ZL_SHM_MAGIC) {
    g_connect_error = std::string(name) + " has no zerolayer header (yet)";
    return ZL_ERR_PROTOCOL;
  }
  if (const char* why = zl::shm::Layout::adopt(base, c->bytes, &c->layout)) {
    g_connect_error = std::string(name) + ": " + why;
    return ZL_ERR_PROTOCOL;
  }
  return ZL_OK;
}

int claim_slot(zl_client* c) {
  uint32_t num_clients = c->layout.num_clients();
  for (uint32_t i = 0; i < num_clients; ++i) {
    zl_shm_client& slot = c->layout.client(i);
    uint32_t expected = ZL_SHM_CLIENT_FREE;
    if (!atomic(slot.state).compare_exchange_strong(expected, ZL_SHM_CLIENT_CLAIMING)) continue;
    slot.pid = getpid();
    atomic(slot.heartbeat_ns).store(now_ns(), std::memory_order_release);
    c->slot = i;
    c->generation = atomic(slot.generation).load(std::memory_order_acquire);
    c->dequeue_pos = atomic(slot.response_dequeue_pos).load();
    atomic(slot.state).store(ZL_SHM_CLIENT_ACTIVE, std::memory_order_release);
    return ZL_OK;
  }
  g_connect_error = "all " + std::to_string(num_clients) + " client slots are taken";
  return ZL_ERR_NO_SLOT;
}

// Claims a request position (waiting while the ring is full), lets `fill`
// write the record, publishes and wakes the server.
template <typename Fill>
int push_request(zl_client* c, Fill fill) {
  zl_shm_header& h = c->header();
  auto slot_at = [&](uint64_t pos) -> zl_shm_request_slot& { return c->layout.request_slot(pos); };
  uint64_t pos = 0;
  uint64_t deadline = now_ns() + kRingFullWaitNs;
  while (zl::shm::ring_claim<zl_shm_request_slot>(h.request_enqueue_pos, &c->me().pending_request_pos, slot_at,
                                                   &pos) != zl::shm::PushResult::kOk) {
    if (int status = c->check_server(); status != ZL_OK) return status;
    if (now_ns() > deadline) return c->fail(ZL_ERR_FULL, "the request ring stayed full for 5 s");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  zl_shm_request_slot& slot = slot_at(pos);
  fill(slot.request);
  if (zl::shm::ring_publish(slot, pos, &c->me().pending_request_pos) != zl::shm::PushResult::kOk)
    return c->fail(ZL_ERR_LOST, "the server skipped this request (it took this client for dead)");
  zl::shm::wake_if_sleeping(h.server_sleeping, h.request_futex);
  return ZL_OK;
}

// Chat messages as ZL_SHM_PROMPT_CHAT packs them: role, length, content.
uint64_t chat_bytes(const zl_request* r) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < r->num_messages; ++i) n += 8 + uint64_t(r->messages[i].content_bytes);
  return n;
}

uint64_t prompt_bytes(const zl_request* r) {
  return r->prompt_ids ? uint64_t(r->num_prompt_ids) * 4 : r->prompt_text ? r->prompt_text_bytes : chat_bytes(r);
}

// The payload besides the prompt (which may go ahead in PROMPT_PART records).
uint64_t payload_size(const zl_request* r, std::string* why) {
  uint64_t n = uint64_t(r->num_stop_token_ids) * 4;
  for (uint32_t i = 0; i < r->num_stop && i < ZL_SHM_MAX_STOP; ++i) n += std::strlen(r->stop[i]);
  n += r->cache_salt ? std::strlen(r->cache_salt) : 0;
  n += r->structured_spec ? r->structured_spec_bytes : 0;
  n += uint64_t(r->num_logit_bias) * sizeof(zl_shm_logit_bias);
  if (r->num_stop > ZL_SHM_MAX_STOP) *why = "num_stop exceeds ZL_SHM_MAX_STOP";
  if (r->num_logit_bias > ZL_SHM_MAX_LOGIT_BIAS) *why = "num_logit_bias exceeds ZL_SHM_MAX_LOGIT_BIAS";
  if (r->num_stop_token_ids > ZL_SHM_MAX_STOP_TOKEN_IDS) *why = "num_stop_token_ids exceeds ZL_SHM_MAX_STOP_TOKEN_IDS";
  if (n >= ZL_SHM_REQUEST_PAYLOAD_BYTES)
    *why = "stop token ids, stop strings, salt, structured spec and logit bias take " + std::to_string(n) +
           " bytes; one record holds " +
           std::to_string(ZL_SHM_REQUEST_PAYLOAD_BYTES) + " beside at least one prompt byte";
  if (prompt_bytes(r) > UINT32_MAX) *why = "the prompt takes more than 4 GiB";
  return n;
}

// The prompt's bytes as the record's payload carries them.
std::string pack_prompt(const zl_request* r) {
  std::string out;
  if (r->prompt_ids) {
    out.assign(reinterpret_cast<const char*>(r->prompt_ids), size_t(r->num_prompt_ids) * 4);
  } else if (r->prompt_text) {
    out.assign(r->prompt_text, r->prompt_text_bytes);
  } else {
    for (uint32_t i = 0; i < r->num_messages; ++i) {
      const zl_chat_message& m = r->messages[i];
      uint32_t head[2] = {m.role, m.content_bytes};
      out.append(reinterpret_cast<const char*>(head), sizeof(head));
      out.append(m.content, m.content_bytes);
    }
  }
  return out;
}

uint32_t prompt_kind(const zl_request* r) {
  return r->prompt_ids ? ZL_SHM_PROMPT_TOKENS : r->prompt_text ? ZL_SHM_PROMPT_TEXT : ZL_SHM_PROMPT_CHAT;
}

// Zeroes the fixed part and fills what every record kind carries.
void begin_record(const zl_client* c, uint32_t kind, uint64_t id, zl_shm_request& out) {
  std::memset(&out, 0, ZL_SHM_REQUEST_FIXED_BYTES);
  out.kind = kind;
  out.client_slot = c->slot;
  out.client_request_id = id;
  out.client_generation = c->generation;
  out.submit_ns = now_ns();
}

// A SUBMIT whose prompt is `prompt` minus the first `in_parts` bytes, sent before.
void fill_request(const zl_client* c, const zl_request* r, uint64_t id, std::string_view prompt, uint32_t in_parts,
                  zl_shm_request& out) {
  begin_record(c, ZL_SHM_REQUEST_SUBMIT, id, out);
  out.sampling = r->sampling;
  out.max_new_tokens = r->max_new_tokens;
  out.priority = r->priority;
  out.min_token_prob = r->min_token_prob;
  out.ignore_eos = r->ignore_eos ? 1 : 0;
  uint8_t* p = out.payload;
  auto put = [&](const void* data, size_t n) {
    if (n == 0) return;  // data may be null then (no stop ids), which memcpy does not allow
    std::memcpy(p, data, n);
    p += n;
  };
  out.prompt_kind = prompt_kind(r);
  out.prompt_count = r->prompt_ids ? r->num_prompt_ids : uint32_t(prompt.size());
  out.prompt_bytes_in_parts = in_parts;
  put(prompt.data() + in_parts, prompt.size() - in_parts);
  out.num_stop_token_ids = r->num_stop_token_ids;
  put(r->stop_token_ids, size_t(r->num_stop_token_ids) * 4);
  out.num_stop = r->num_stop;
  for (uint32_t i = 0; i < r->num_stop; ++i) {
    out.stop_bytes[i] = uint32_t(std::strlen(r->stop[i]));
    put(r->stop[i], out.stop_bytes[i]);
  }
  if (r->cache_salt) {
    out.cache_salt_bytes = uint32_t(std::strlen(r->cache_salt));
    put(r->cache_salt, out.cache_salt_bytes);
  }
  out.structured_kind = r->structured_kind;
  if (r->structured_spec) {
    out.structured_bytes = r->structured_spec_bytes;
    put(r->structured_spec, out.structured_bytes);
  }
  out.num_logit_bias = r->logit_bias ? r->num_logit_bias : 0;
  put(r->logit_bias, size_t(out.num_logit_bias) * sizeof(zl_shm_logit_bias));
  out.keep_special_tokens = r->keep_special_tokens ? 1 : 0;
  if (r->signature) {
    out.has_signature = 1;
    std::memcpy(out.signature, r->signature, 16);
  }
  out.payload_bytes = uint32_t(p - out.payload);
}

}  // namespace

extern "C" {

void zl_request_init(zl_request* r) {
  std::memset(r, 0, sizeof(*r));
  r->sampling.temperature = 1.0f;
  r->sampling.top_p = 1.0f;
  r->sampling.repetition_penalty = 1.0f;
  r->max_new_tokens = 256;
}

int zl_client_connect(const char* name, zl_client** out) {
  *out = nullptr;
  if (name == nullptr) {
    g_connect_error = "name is NULL";
    return ZL_ERR_INVALID;
  }
  auto* c = new zl_client();
  int status = map_segment(name, c);
  if (status == ZL_OK) {
    if (c->check_server() == ZL_ERR_SERVER_DEAD) {
      g_connect_error = std::string(name) + ": " + c->error;
      status = ZL_ERR_SERVER_DEAD;
    } else {
      status = claim_slot(c);
    }
  }
  if (status != ZL_OK) {
    if (c->base) munmap(c->base, c->bytes);
    delete c;
    return status;
  }
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) c->num_cpus = CPU_COUNT(&cpus);
  c->heartbeat = std::thread([c] {
    while (!c->stop.load(std::memory_order_relaxed)) {
      atomic(c->me().heartbeat_ns).store(now_ns(), std::memory_order_release);
      std::this_thread::sleep_for(std::chrono::milliseconds(ZL_SHM_HEARTBEAT_PERIOD_NS / 2'000'000));
    }
  });
  *out = c;
  return ZL_OK;
}

int zl_client_submit(zl_client* c, const zl_request* r, uint64_t* id) {
  if (c == nullptr || r == nullptr) return ZL_ERR_INVALID;
  if (r->prompt_ids == nullptr && r->prompt_text == nullptr && (r->messages == nullptr || r->num_messages == 0))
    return c->fail(ZL_ERR_INVALID, "no prompt: set prompt_ids, prompt_text or messages");
  for (uint32_t i = 0; r->prompt_ids == nullptr && r->prompt_text == nullptr && i < r->num_messages; ++i) {
    if (r->messages[i].content == nullptr && r->messages[i].content_bytes > 0)
      return c->fail(ZL_ERR_INVALID, "messages[" + std::to_string(i) + "].content is NULL");
  }
  std::string why;
  const uint64_t rest = payload_size(r, &why);
  if (!why.empty()) return c->fail(ZL_ERR_INVALID, why);
  const std::string prompt = pack_prompt(r);
  uint64_t request_id = c->next_id++;
  // What does not fit beside the rest goes ahead in PROMPT_PART records.
  const size_t in_parts = prompt.size() - std::min<size_t>(prompt.size(), ZL_SHM_REQUEST_PAYLOAD_BYTES - rest);
  int status = ZL_OK;
  for (size_t at = 0; at < in_parts && status == ZL_OK; at += ZL_SHM_REQUEST_PAYLOAD_BYTES) {
    const size_t n = std::min<size_t>(ZL_SHM_REQUEST_PAYLOAD_BYTES, in_parts - at);
    status = push_request(c, [&](zl_shm_request& out) {
      begin_record(c, ZL_SHM_REQUEST_PROMPT_PART, request_id, out);
      out.prompt_kind = prompt_kind(r);
      out.payload_bytes = uint32_t(n);
      std::memcpy(out.payload, prompt.data() + at, n);
    });
  }
  if (status == ZL_OK) {
    status = push_request(c, [&](zl_shm_request& out) {
      fill_request(c, r, request_id, prompt, uint32_t(in_parts), out);
    });
  }
  if (status == ZL_OK && id) *id = request_id;
  return status;
}

int zl_client_submit_raw(zl_client* c, const zl_shm_request* record) {
  return push_request(c, [&](zl_shm_request& out) {
    std::memcpy(&out, record, ZL_SHM_REQUEST_FIXED_BYTES);
    std::memcpy(out.payload, record->payload, std::min<uint32_t>(record->payload_bytes, ZL_SHM_REQUEST_PAYLOAD_BYTES));
  });
}

int zl_client_cancel(zl_client* c, uint64_t id) {
  return push_request(c, [&](zl_shm_request& out) { begin_record(c, ZL_SHM_REQUEST_CANCEL, id, out); });
}

namespace {

// More runnable threads than CPUs right now (/proc/loadavg); false when unknown.
bool cpus_busy(int num_cpus) {
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 && zl::shm::runnable_from_loadavg(std::string_view(buf, size_t(n))) > num_cpus;
}

// A spin ended: descheduled (it sleeps now, or its record's hand-over was
// delayed), or it read its record undisturbed.
void note_spin_end(zl_client* c, bool preempted, uint64_t now) {
  if (!preempted) return c->spin.on_clean_spin();
  c->spin.on_preempted(now);
  ++c->wait_stats.num_preempted_spins;
}

}  // namespace

int zl_client_next_event(zl_client* c, zl_event* event, int timeout_ms) {
  zl_shm_client& me = c->me();
  uint32_t num_slots = c->layout.response_ring_slots();
  uint64_t start = now_ns();
  uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : start + uint64_t(timeout_ms) * 1'000'000;
  if (start - c->cpus_checked_ns >= kCheckCpusNs) {
    c->spin.set_cpus_busy(cpus_busy(c->num_cpus));
    c->cpus_checked_ns = start;
  }
  uint64_t spin_until = c->spin.spin_deadline(start);
  uint64_t last_clock = start;
  bool slept = false;
  for (uint32_t spins = 0;; ++spins) {
    zl_shm_response_slot& slot = c->layout.response_slot(c->slot, c->dequeue_pos);
    if (zl::shm::ring_ready(slot, c->dequeue_pos)) {
      std::memcpy(&event->record, &slot.response, sizeof(zl_shm_response));
      event->read_ns = now_ns();
      zl::shm::ring_release(slot, c->dequeue_pos, num_slots);
      atomic(me.response_dequeue_pos).store(++c->dequeue_pos, std::memory_order_release);
      if (event->record.text_bytes > ZL_SHM_RESPONSE_TEXT_BYTES) event->record.text_bytes = ZL_SHM_RESPONSE_TEXT_BYTES;
      if (event->record.num_top_logprobs > ZL_SHM_MAX_TOP_LOGPROBS) event->record.num_top_logprobs = 0;
      if (spins > 0 && !slept) note_spin_end(c, event->read_ns - last_clock > SpinPolicy::kPreemptedNs, event->read_ns);
      c->spin.on_record(event->record.sink_ns, zl_event_is_terminal(event));
      ++c->wait_stats.num_events;
      c->wait_stats.num_woken_events += slept ? 1 : 0;
      return ZL_OK;
    }
    if ((spins & 63) != 0) {
      cpu_relax();
      continue;
    }
    uint64_t clock = now_ns();
    if (clock - last_clock > SpinPolicy::kPreemptedNs && clock < spin_until) {
      note_spin_end(c, true, clock);
      spin_until = clock;
    }
    last_clock = clock;
    if (clock < spin_until) continue;
    if (clock - c->server_checked_ns >= kCheckServerNs) {
      if (int status = c->check_server(); status != ZL_OK) return status;
      c->server_checked_ns = clock;
    }
    uint64_t now = now_ns();
    if (now >= deadline) return c->fail(ZL_ERR_TIMEOUT, "no event within the timeout");
    uint32_t seen = atomic(me.response_futex).load(std::memory_order_acquire);
    atomic(me.client_sleeping).store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!zl::shm::ring_ready(slot, c->dequeue_pos)) {
      zl::shm::futex_wait(&me.response_futex, seen, std::min(kSleepSliceNs, deadline - now));
      ++c->wait_stats.num_sleeps;
      slept = true;
    }
    atomic(me.client_sleeping).store(0, std::memory_order_relaxed);
    last_clock = now_ns();
  }
}

int zl_client_stream(zl_client* c, const zl_request* r, zl_event_callback callback, void* user, int timeout_ms) {
  uint64_t id = 0;
  if (int status = zl_client_submit(c, r, &id); status != ZL_OK) return status;
  zl_event event;
  bool cancelled = false;
  for (;;) {
    if (int status = zl_client_next_event(c, &event, timeout_ms); status != ZL_OK) return status;
    bool mine = event.record.client_request_id == id;
    if (callback(&event, user) != 0 && mine && !cancelled) {
      cancelled = true;
      zl_client_cancel(c, id);
    }
    if (mine && zl_event_is_terminal(&event)) return ZL_OK;
  }
}

void zl_client_close(zl_client* c) {
  if (c == nullptr) return;
  c->stop.store(true);
  if (c->heartbeat.joinable()) c->heartbeat.join();
  uint32_t expected = ZL_SHM_CLIENT_ACTIVE;
  if (atomic(c->me().generation).load() == c->generation)
    atomic(c->me().state).compare_exchange_strong(expected, ZL_SHM_CLIENT_CLOSING);
  munmap(c->base, c->bytes);
  delete c;
}

const char* zl_client_last_error(const zl_client* c) { return c ? c->error.c_str() : g_connect_error.c_str(); }

const char* zl_status_name(int status) {
  switch (status) {
    case ZL_OK: return "ok";
    case ZL_ERR_INVALID: return "invalid argument";
    case ZL_ERR_NOT_FOUND: return "segment not found";
    case ZL_ERR_NO_SLOT: return "no free client slot";
    case ZL_ERR_SERVER_DEAD: return "server dead";
    case ZL_ERR_TIMEOUT: return "timeout";
    case ZL_ERR_FULL: return "request ring full";
    case ZL_ERR_PROTOCOL: return "protocol mismatch";
    case ZL_ERR_LOST: return "lost (slot reclaimed)";
  }
  return "unknown status";
}

int zl_event_is_terminal(const zl_event* e) {
  return e->record.kind == ZL_SHM_RESPONSE_FINISH || e->record.kind == ZL_SHM_RESPONSE_ERROR;
}

void zl_client_set_spin_us(zl_client* c, uint32_t spin_us) { c->spin.set_fixed_ns(uint64_t(spin_us) * 1000); }
void zl_client_set_adaptive_spin_us(zl_client* c, uint32_t max_us) { c->spin.set_adaptive_ns(uint64_t(max_us) * 1000); }
void zl_client_get_wait_stats(const zl_client* c, zl_client_wait_stats* out) { *out = c->wait_stats; }

uint32_t zl_client_slot(const zl_client* c) { return c->slot; }
uint64_t zl_client_generation(const zl_client* c) { return c->generation; }

}  // extern "C"
