// The reader thread does everything but writing token records: it drains the
// request ring, validates and submits, answers rejections, handles cancels,
// refreshes the server heartbeat, reclaims dead clients and aborts requests
// whose client stopped reading. Engine-thread work is confined to ShmSink,
// which only claims a response slot, fills it, publishes and maybe wakes.
#include "transport/shm_server.h"

#include <signal.h>

#include <cerrno>
#include <thread>
#include <unordered_map>

#include "bundle/chat_prompt.h"
#include "core/log.h"
#include "transport/shm_segment.h"
#include "transport/wire.h"
#include "zerolayer/engine.h"

namespace zl {
namespace {

constexpr uint64_t kTickNs = 20'000'000;           // heartbeat and monitor period
constexpr uint64_t kSkipAfterNs = 50'000'000;      // a claimed, unpublished request position
constexpr uint64_t kSleepNs = 50'000'000;          // reader's futex timeout
constexpr uint64_t kSpinNs = 50'000;               // the reader spins this long before sleeping

bool pid_alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

struct Counters {
  std::atomic<int64_t> submitted{0}, rejected{0}, unroutable{0}, stale{0}, skipped{0}, reclaimed{0},
      overflows{0}, signature_hints{0}, header_repairs{0};
};

class ShmSink;

// Server-side state of one client slot.
struct ClientState {
  alignas(64) uint64_t enqueue_pos = 0;  // response ring claim counter (atomic_ref; server-private)
  std::atomic<int32_t> num_inflight{0};  // requests holding a reserved terminal slot
  std::atomic<bool> closed{false};       // sinks drop their records once set
  // Reader thread only.
  bool reclaiming = false;
  uint64_t claiming_since_ns = 0;
  std::unordered_map<uint64_t, std::shared_ptr<ShmSink>> live;  // client_request_id -> sink
  // A long prompt arriving in PROMPT_PART records, for the SUBMIT that follows.
  struct PromptParts {
    uint64_t request_id = 0;
    uint32_t prompt_kind = 0;
    std::string bytes;
    Status error;  // the first problem with the parts: the SUBMIT's answer
    void reset() {
      bytes.clear();
      bytes.shrink_to_fit();
      error = ok_status();
    }
  } parts;
};

}  // namespace

class ShmServer::Impl {
 public:
  Impl(Engine& engine, std::unique_ptr<ShmSegment> segment, const ShmServerConfig& config);
  ~Impl();

  // Any server thread: one record into client c's ring, leaving `headroom`
  // slots free. False if the ring is full (or the client is gone).
  template <typename Fill>
  bool push_response(uint32_t c, uint32_t headroom, Fill fill);
  void push_error(uint32_t c, uint64_t client_request_id, const Status& status);
  void note_overflow();

  Engine& engine_;
  std::unique_ptr<ShmSegment> segment_;
  shm::Layout layout_;
  std::unique_ptr<ClientState[]> clients_;
  uint32_t num_clients_ = 0;
  WireLimits limits_;
  StatusOr<LoadedChatTemplate> chat_;    // the model's template, or why there is none
  Counters counters_;
  std::atomic<int32_t> overflow_pending_{0};
  std::atomic<bool> stop_{false};
  std::thread reader_;

 private:
  void run();
  bool drain_one();
  Status render_chat(WireRequest& wire);
  void skip_dead_claim(uint64_t pos, uint64_t* stuck_since_ns);
  void sleep_until_request();
  void tick(uint64_t now);
  void handle(const zl_shm_request& record);
  void handle_submit(uint32_t c, const zl_shm_request& record);
  void handle_prompt_part(uint32_t c, const zl_shm_request& record);
  void monitor_client(uint32_t c, uint64_t now);
  void begin_reclaim(uint32_t c);
  void finish_reclaim(uint32_t c);
  void abort_overflowed();
  void prune_finished();

  uint64_t dequeue_pos_ = 0;
  LogLimiter repair_log_, dead_client_log_;
  std::unique_ptr<zl_shm_request> scratch_;  // the copied-out record
};

namespace {

// Writes one request's events into its client's response ring, from the
// engine's output stage: no locks, no allocation, never blocks. A full ring (the
// client is not reading) drops the record, marks the request overflowed and
// asks the reader thread to abort it; its terminal record always fits, as
// the server keeps one slot per in-flight request in reserve.
class ShmSink : public EventSink {
 public:
  ShmSink(ShmServer::Impl* server, uint32_t client, uint64_t client_request_id)
      : server_(server), client_(client), client_request_id_(client_request_id) {}

  void on_token(const TokenEvent& event) override {
    ClientState& cs = server_->clients_[client_];
    if (overflowed_.load(std::memory_order_relaxed) || cs.closed.load(std::memory_order_acquire)) return;
    uint32_t headroom = uint32_t(cs.num_inflight.load(std::memory_order_relaxed));
    size_t sent = 0;
    bool ok = server_->push_response(client_, headroom, [&](zl_shm_response& r) {
      sent = fill_token(r, client_request_id_, event);
    });
    std::string_view text = event.text;
    while (ok && sent < text.size()) {
      ok = server_->push_response(client_, headroom, [&](zl_shm_response& r) {
        sent += fill_text(r, client_request_id_, text.substr(sent));
      });
    }
    if (!ok) mark_overflowed();
  }

  void on_finish(const FinishEvent& event) override {
    ClientState& cs = server_->clients_[client_];
    if (!cs.closed.load(std::memory_order_acquire)) {
      uint32_t others = uint32_t(std::max(cs.num_inflight.load(std::memory_order_relaxed) - 1, 0));
      std::string_view text = event.remaining_text;
      for (size_t sent = 0; sent < text.size() && !overflowed_.load(std::memory_order_relaxed);) {
        if (!server_->push_response(client_, others + 1, [&](zl_shm_response& r) {
              sent += fill_text(r, client_request_id_, text.substr(sent));
            }))
          mark_overflowed();
      }
      bool overflowed = overflowed_.load(std::memory_order_relaxed);
      FinishEvent overflow_event;
      const FinishEvent* terminal = &event;
      if (overflowed) {
        overflow_event = event;  // copies only on this rare path
        overflow_event.reason = FinishReason::kError;
        overflow_event.stop_detail = "response ring overflow: the client did not read its records in time";
        terminal = &overflow_event;
      }
      server_->push_response(client_, others, [&](zl_shm_response& r) {
        fill_finish(r, client_request_id_, *terminal, overflowed ? ZL_SHM_FLAG_TOKENS_DROPPED : 0);
      });
    }
    finished_.store(true, std::memory_order_release);
    cs.num_inflight.fetch_sub(1, std::memory_order_release);
  }

  std::atomic<uint64_t> engine_id{0};  // set by the reader after submit
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  bool overflowed() const { return overflowed_.load(std::memory_order_acquire); }
  bool abort_sent = false;             // reader thread only

 private:
  void mark_overflowed() {
    if (!overflowed_.exchange(true, std::memory_order_acq_rel)) server_->note_overflow();
  }

  ShmServer::Impl* server_;
  uint32_t client_;
  uint64_t client_request_id_;
  std::atomic<bool> finished_{false};
  std::atomic<bool> overflowed_{false};
};

}  // namespace

ShmServer::Impl::Impl(Engine& engine, std::unique_ptr<ShmSegment> segment, const ShmServerConfig& config)
    : engine_(engine), segment_(std::move(segment)), layout_(segment_->layout()),
      chat_(load_chat_template(engine.model_info().path, config.tokenizer_path,
                               engine.model_info().gguf_chat_template, config.chat_template, &engine.tokenizer())),
      scratch_(std::make_unique<zl_shm_request>()) {
  num_clients_ = layout_.num_clients();
  clients_ = std::make_unique<ClientState[]>(num_clients_);
  limits_.vocab_size = engine.model_info().vocab_size;
  limits_.max_seq_len = engine.model_info().max_seq_len;
  limits_.server_start_ns = layout_.server_start_ns();
  reader_ = std::thread([this] { run(); });
}

ShmServer::Impl::~Impl() {
  stop_.store(true);
  zl_shm_header& h = layout_.header();
  shm::atomic(h.request_futex).fetch_add(1);
  shm::futex_wake(&h.request_futex);
  reader_.join();
  // Abort what is in flight; each request's terminal record still reaches its client.
  for (uint32_t c = 0; c < num_clients_; ++c)
    for (auto& [id, sink] : clients_[c].live)
      if (!sink->finished()) engine_.abort(sink->engine_id.load());
  uint64_t deadline = shm::now_ns() + 5'000'000'000ull;
  for (uint32_t c = 0; c < num_clients_; ++c)
    while (clients_[c].num_inflight.load(std::memory_order_acquire) > 0 && shm::now_ns() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  engine_.detach_stats_region(segment_->stats_region());
  // segment_'s destructor marks the header STOPPED and unlinks the name.
}

template <typename Fill>
bool ShmServer::Impl::push_response(uint32_t c, uint32_t headroom, Fill fill) {
  ClientState& cs = clients_[c];
  auto slot_at = [&](uint64_t pos) -> zl_shm_response_slot& { return layout_.response_slot(c, pos); };
  uint64_t pos = 0;
  if (shm::ring_claim<zl_shm_response_slot>(cs.enqueue_pos, nullptr, slot_at, &pos, headroom) !=
      shm::PushResult::kOk) {
    shm::atomic(layout_.client(c).num_dropped).fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  zl_shm_response_slot& slot = slot_at(pos);
  fill(slot.response);
  shm::ring_publish(slot, pos, nullptr);
  zl_shm_client& client = layout_.client(c);
  shm::wake_if_sleeping(client.client_sleeping, client.response_futex);
  return true;
}

void ShmServer::Impl::push_error(uint32_t c, uint64_t client_request_id, const Status& status) {
  counters_.rejected.fetch_add(1, std::memory_order_relaxed);
  uint32_t headroom = uint32_t(clients_[c].num_inflight.load(std::memory_order_relaxed));
  push_response(c, headroom, [&](zl_shm_response& r) { fill_error(r, client_request_id, status); });
}

void ShmServer::Impl::note_overflow() {
  counters_.overflows.fetch_add(1, std::memory_order_relaxed);
  overflow_pending_.fetch_add(1, std::memory_order_release);
}

void ShmServer::Impl::run() {
  uint64_t last_tick = 0, stuck_since = 0, idle_since = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    bool worked = false;
    for (int i = 0; i < 64 && drain_one(); ++i) worked = true;
    uint64_t now = shm::now_ns();
    if (now - last_tick >= kTickNs) {
      tick(now);
      last_tick = now;
    }
    if (worked) {
      idle_since = 0;
      stuck_since = 0;
      continue;
    }
    if (idle_since == 0) idle_since = now;
    bool spun_enough = now - idle_since > kSpinNs;
    uint64_t claimed = shm::atomic(layout_.header().request_enqueue_pos).load(std::memory_order_acquire);
    if (claimed != dequeue_pos_) {  // claimed but unpublished: a producer mid-write, or dead
      skip_dead_claim(dequeue_pos_, &stuck_since);
      if (spun_enough) std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    if (!spun_enough) continue;
    sleep_until_request();
    idle_since = 0;
  }
}

bool ShmServer::Impl::drain_one() {
  zl_shm_request_slot& slot = layout_.request_slot(dequeue_pos_);
  if (!shm::ring_ready(slot, dequeue_pos_)) return false;
  copy_request_out(slot.request, scratch_.get());
  shm::ring_release(slot, dequeue_pos_, layout_.request_ring_slots());
  ++dequeue_pos_;
  shm::atomic(layout_.header().request_dequeue_pos).store(dequeue_pos_, std::memory_order_relaxed);
  handle(*scratch_);
  return true;
}

// Position `pos` is claimed but not published. If no live client says it is
// writing it (pending_request_pos), its producer died: skip the position.
void ShmServer::Impl::skip_dead_claim(uint64_t pos, uint64_t* stuck_since_ns) {
  uint64_t now = shm::now_ns();
  if (*stuck_since_ns == 0) *stuck_since_ns = now;
  if (now - *stuck_since_ns < kSkipAfterNs) return;
  for (uint32_t c = 0; c < num_clients_; ++c) {
    zl_shm_client& client = layout_.client(c);
    if (shm::atomic(client.pending_request_pos).load(std::memory_order_seq_cst) == pos + 1 &&
        shm::atomic(client.state).load() != ZL_SHM_CLIENT_FREE)
      return;  // alive and writing; its heartbeat decides if it hangs
  }
  zl_shm_request_slot& slot = layout_.request_slot(pos);
  uint64_t expected = pos;
  // The CAS fails if the producer published meanwhile; then drain takes it.
  if (shm::atomic(slot.sequence).compare_exchange_strong(expected, pos + layout_.request_ring_slots())) {
    ++dequeue_pos_;
    counters_.skipped.fetch_add(1, std::memory_order_relaxed);
    log_warn("shm: skipped request position ", pos, " claimed by a dead client");
  }
  *stuck_since_ns = 0;
}

void ShmServer::Impl::sleep_until_request() {
  zl_shm_header& h = layout_.header();
  uint32_t seen = shm::atomic(h.request_futex).load(std::memory_order_acquire);
  shm::atomic(h.server_sleeping).store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool empty = !shm::ring_ready(layout_.request_slot(dequeue_pos_), dequeue_pos_) &&
               shm::atomic(h.request_enqueue_pos).load() == dequeue_pos_;
  if (empty && !stop_.load()) shm::futex_wait(&h.request_futex, seen, kSleepNs);
  shm::atomic(h.server_sleeping).store(0, std::memory_order_relaxed);
}

void ShmServer::Impl::tick(uint64_t now) {
  shm::atomic(layout_.header().server_heartbeat_ns).store(now, std::memory_order_release);
  if (segment_->repair_header()) {
    counters_.header_repairs.fetch_add(1, std::memory_order_relaxed);
    if (int64_t left_out; repair_log_.allow(now, &left_out)) {
      log_warn("shm: a client overwrote the segment header of ", segment_->name(), "; restored it (",
               counters_.header_repairs.load(), " times so far)");
    }
  }
  for (uint32_t c = 0; c < num_clients_; ++c) monitor_client(c, now);
  if (overflow_pending_.exchange(0, std::memory_order_acq_rel) > 0) abort_overflowed();
  prune_finished();
}

void ShmServer::Impl::handle(const zl_shm_request& record) {
  uint32_t c = record.client_slot;
  if (c >= num_clients_) {
    counters_.unroutable.fetch_add(1, std::memory_order_relaxed);
    log_warn("shm: dropped a record for client slot ", c, " (", num_clients_, " slots): nowhere to answer");
    return;
  }
  zl_shm_client& client = layout_.client(c);
  if (shm::atomic(client.state).load(std::memory_order_acquire) != ZL_SHM_CLIENT_ACTIVE ||
      shm::atomic(client.generation).load() != record.client_generation || clients_[c].reclaiming) {
    counters_.stale.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  switch (record.kind) {
    case ZL_SHM_REQUEST_SUBMIT:
      handle_submit(c, record);
      return;
    case ZL_SHM_REQUEST_PROMPT_PART:
      handle_prompt_part(c, record);
      return;
    case ZL_SHM_REQUEST_CANCEL: {
      auto it = clients_[c].live.find(record.client_request_id);
      if (it != clients_[c].live.end() && !it->second->finished()) engine_.abort(it->second->engine_id.load());
      return;
    }
  }
  push_error(c, record.client_request_id, invalid_argument("kind must be 1 (submit), 2 (cancel) or 3 (prompt part), got ", record.kind));
}

// Collects a long prompt's leading bytes; problems are kept for the SUBMIT
// to answer, so that the request gets exactly one terminal record.
void ShmServer::Impl::handle_prompt_part(uint32_t c, const zl_shm_request& record) {
  ClientState::PromptParts& parts = clients_[c].parts;
  if (parts.request_id != record.client_request_id || (parts.bytes.empty() && parts.error.ok())) {
    parts.reset();  // a new request's first part (an unfinished one before it is dropped)
    parts.request_id = record.client_request_id;
    parts.prompt_kind = record.prompt_kind;
  }
  if (!parts.error.ok()) return;
  const uint64_t limit = max_prompt_part_bytes(limits_, record.prompt_kind);
  if (record.prompt_kind != parts.prompt_kind) {
    parts.error = invalid_argument("prompt_kind of a PROMPT_PART changed from ", parts.prompt_kind, " to ",
                                   record.prompt_kind);
  } else if (record.payload_bytes == 0 || record.payload_bytes > ZL_SHM_REQUEST_PAYLOAD_BYTES) {
    parts.error = invalid_argument("a PROMPT_PART's payload_bytes must be in [1, ", ZL_SHM_REQUEST_PAYLOAD_BYTES,
                                   "], got ", record.payload_bytes);
  } else if (parts.bytes.size() + record.payload_bytes > limit) {
    parts.error = invalid_argument("prompt parts exceed ", limit, " bytes (max_seq_len ", limits_.max_seq_len, ")");
  }
  if (!parts.error.ok()) {
    parts.bytes.clear();
    return;
  }
  parts.bytes.append(reinterpret_cast<const char*>(record.payload), record.payload_bytes);
}

void ShmServer::Impl::handle_submit(uint32_t c, const zl_shm_request& record) {
  ClientState& cs = clients_[c];
  uint64_t id = record.client_request_id;
  // The parts, if they are this request's, are used up by it either way.
  std::string head;
  Status parts_error;
  if (cs.parts.request_id == id && (!cs.parts.bytes.empty() || !cs.parts.error.ok())) {
    head = std::move(cs.parts.bytes);
    parts_error = cs.parts.error;
    cs.parts.reset();
  }
  if (!parts_error.ok()) return push_error(c, id, parts_error);
  auto it = cs.live.find(id);
  if (it != cs.live.end() && !it->second->finished())
    return push_error(c, id, invalid_argument("client_request_id ", id, " is already in flight"));
  if (uint32_t(cs.num_inflight.load()) >= layout_.max_inflight_per_client())
    return push_error(c, id, resource_exhausted("client has ", cs.num_inflight.load(),
                                                " requests in flight, the most max_inflight_per_client allows"));
  WireRequest wire;
  Status status = decode_submit(record, limits_, head, &wire);
  if (status.ok() && !wire.chat.empty()) status = render_chat(wire);
  if (!status.ok()) return push_error(c, id, status);
  if (wire.has_signature) counters_.signature_hints.fetch_add(1, std::memory_order_relaxed);
  auto sink = std::make_shared<ShmSink>(this, c, id);
  wire.request.sink = sink;
  cs.num_inflight.fetch_add(1, std::memory_order_acq_rel);  // reserves the terminal slot first
  StatusOr<RequestId> engine_id = engine_.submit(std::move(wire.request));
  if (!engine_id.ok()) {
    cs.num_inflight.fetch_sub(1, std::memory_order_acq_rel);
    return push_error(c, id, engine_id.status());
  }
  sink->engine_id.store(*engine_id, std::memory_order_release);
  cs.live[id] = std::move(sink);
  counters_.submitted.fetch_add(1, std::memory_order_relaxed);
}

// Chat messages become prompt ids on this (reader) thread, as /v1/chat/completions
// does: the template with the generation prompt, special-token text parsed,
// and the template's end-of-turn tokens as stop ids.
Status ShmServer::Impl::render_chat(WireRequest& wire) {
  if (!chat_.ok()) return chat_.status().with_prefix("chat: this model has no usable chat template");
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  for (const ChatMessage& m : wire.chat) messages.push_back({{"role", m.role}, {"content", m.content}});
  ZL_ASSIGN_OR_RETURN(ChatPrompt prompt, render_chat_prompt(*chat_, engine_.tokenizer(), messages, {}));
  wire.request.prompt_ids = std::move(prompt.ids);
  add_end_of_turn_stops(*chat_, wire.request.ignore_eos, wire.request.stop_token_ids);
  return ok_status();
}

void ShmServer::Impl::monitor_client(uint32_t c, uint64_t now) {
  ClientState& cs = clients_[c];
  if (cs.reclaiming) {
    if (cs.num_inflight.load(std::memory_order_acquire) == 0) finish_reclaim(c);
    return;
  }
  zl_shm_client& client = layout_.client(c);
  uint32_t state = shm::atomic(client.state).load(std::memory_order_acquire);
  if (state != ZL_SHM_CLIENT_CLAIMING) cs.claiming_since_ns = 0;
  if (state == ZL_SHM_CLIENT_FREE) return;
  if (state == ZL_SHM_CLIENT_CLAIMING) {
    if (cs.claiming_since_ns == 0) cs.claiming_since_ns = now;
    if (now - cs.claiming_since_ns > ZL_SHM_DEAD_AFTER_NS) begin_reclaim(c);
    return;
  }
  if (state != ZL_SHM_CLIENT_ACTIVE) return begin_reclaim(c);  // it closed
  uint64_t beat = shm::atomic(client.heartbeat_ns).load(std::memory_order_acquire);
  bool stale = int64_t(now - beat) > int64_t(ZL_SHM_DEAD_AFTER_NS);
  if (!stale && pid_alive(client.pid)) return;
  if (int64_t left_out; dead_client_log_.allow(now, &left_out))
    log_warn("shm: client slot ", c, " (pid ", client.pid, ") taken for dead: ",
             stale ? "its heartbeat is " + std::to_string(int64_t(now - beat) / 1'000'000) + " ms old" : "its pid is gone",
             left_out > 0 ? str_cat(" (and ", left_out, " more since the last such line)") : std::string());
  begin_reclaim(c);
}

void ShmServer::Impl::begin_reclaim(uint32_t c) {
  ClientState& cs = clients_[c];
  shm::atomic(layout_.client(c).state).store(ZL_SHM_CLIENT_CLOSING, std::memory_order_release);
  cs.closed.store(true, std::memory_order_release);
  cs.reclaiming = true;
  for (auto& [id, sink] : cs.live)
    if (!sink->finished()) engine_.abort(sink->engine_id.load());
  if (cs.num_inflight.load(std::memory_order_acquire) == 0) finish_reclaim(c);
}

// Every request of the client has finished (no sink writes any more): reset
// its ring and free the slot for the next client.
void ShmServer::Impl::finish_reclaim(uint32_t c) {
  ClientState& cs = clients_[c];
  zl_shm_client& client = layout_.client(c);
  uint32_t num_slots = layout_.response_ring_slots();
  for (uint64_t pos = 0; pos < num_slots; ++pos)
    shm::atomic(layout_.response_slot(c, pos).sequence).store(pos, std::memory_order_relaxed);
  shm::atomic(cs.enqueue_pos).store(0, std::memory_order_relaxed);
  cs.live.clear();
  cs.parts.reset();
  cs.closed.store(false, std::memory_order_relaxed);
  cs.reclaiming = false;
  client.pid = 0;
  shm::atomic(client.heartbeat_ns).store(0);
  shm::atomic(client.pending_request_pos).store(0);
  shm::atomic(client.response_dequeue_pos).store(0);
  shm::atomic(client.num_dropped).store(0);
  shm::atomic(client.client_sleeping).store(0);
  shm::atomic(client.generation).fetch_add(1, std::memory_order_acq_rel);
  shm::atomic(client.state).store(ZL_SHM_CLIENT_FREE, std::memory_order_release);
  counters_.reclaimed.fetch_add(1, std::memory_order_relaxed);
}

void ShmServer::Impl::abort_overflowed() {
  for (uint32_t c = 0; c < num_clients_; ++c)
    for (auto& [id, sink] : clients_[c].live)
      if (sink->overflowed() && !sink->abort_sent && !sink->finished()) {
        sink->abort_sent = true;
        engine_.abort(sink->engine_id.load());
      }
}

void ShmServer::Impl::prune_finished() {
  for (uint32_t c = 0; c < num_clients_; ++c) {
    auto& live = clients_[c].live;
    for (auto it = live.begin(); it != live.end();) it = it->second->finished() ? live.erase(it) : std::next(it);
  }
}

Status ShmServer::check_name(const std::string& name) {
  ZL_RETURN_IF_ERROR(check_shm_name(name));
  return check_name_free(name);
}

StatusOr<std::unique_ptr<ShmServer>> ShmServer::start(Engine& engine, const ShmServerConfig& config) {
  ShmSegmentConfig segment_config;
  segment_config.name = config.name;
  segment_config.size_bytes = config.size_bytes;
  segment_config.vocab_size = engine.model_info().vocab_size;
  segment_config.max_seq_len = engine.model_info().max_seq_len;
  ZL_ASSIGN_OR_RETURN(std::unique_ptr<ShmSegment> segment, ShmSegment::create(segment_config));
  void* stats_region = segment->stats_region();
  auto server = std::unique_ptr<ShmServer>(new ShmServer(std::make_unique<Impl>(engine, std::move(segment), config)));
  ZL_RETURN_IF_ERROR(engine.attach_stats_region(stats_region, server->impl_->layout_.stats_bytes())
                         .with_prefix("stats region"));
  return server;
}

ShmServer::ShmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShmServer::~ShmServer() = default;
const std::string& ShmServer::name() const { return impl_->segment_->name(); }

ShmServerStats ShmServer::stats() const {
  const Counters& k = impl_->counters_;
  ShmServerStats s;
  s.num_submitted = k.submitted.load();
  s.num_rejected = k.rejected.load();
  s.num_unroutable = k.unroutable.load();
  s.num_stale_records = k.stale.load();
  s.num_skipped_positions = k.skipped.load();
  s.num_clients_reclaimed = k.reclaimed.load();
  s.num_overflows = k.overflows.load();
  s.num_signature_hints = k.signature_hints.load();
  s.num_header_repairs = k.header_repairs.load();
  return s;
}

}  // namespace zl
