#include "engine/kv_events.h"

#include <zmq.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <deque>
#include <thread>

#include "core/log.h"
#include "core/msgpack.h"

namespace zl {
namespace {

constexpr int kPollMilliseconds = 2;  // how late an event may leave, at most
constexpr size_t kMaxEventsPerBatch = 4096;  // vllm-router refuses larger batches
constexpr size_t kMaxReplayRequestFrames = 8;

std::string big_endian(int64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((uint64_t(v) >> (8 * (7 - i))) & 0xff);
  return out;
}

void put_hash(MsgpackWriter& w, const BlockSignature& s) {
  uint8_t bytes[16];
  put_signature(bytes, s);
  w.bin(bytes, sizeof(bytes));
}

// Consecutive events that extend one chain: a BlockStored of several blocks.
struct EventGroup {
  const KvEvent* first;
  std::vector<const KvEvent*> events;
};

std::vector<EventGroup> group_events(std::span<const KvEvent> events) {
  std::vector<EventGroup> groups;
  for (const KvEvent& e : events) {
    if (!groups.empty()) {
      const KvEvent& last = *groups.back().events.back();
      const bool chains = e.kind == KvEvent::Kind::kStored && last.kind == KvEvent::Kind::kStored && e.has_parent &&
                          e.parent == last.signature;
      const bool both_removed = e.kind == KvEvent::Kind::kRemoved && last.kind == KvEvent::Kind::kRemoved;
      if (chains || both_removed) {
        groups.back().events.push_back(&e);
        continue;
      }
    }
    groups.push_back(EventGroup{&e, {&e}});
  }
  return groups;
}

}  // namespace

KvEventQueue::KvEventQueue(int32_t block_size, size_t bytes) : block_size_(block_size) {
  stride_ = (sizeof(Header) + sizeof(int32_t) * size_t(block_size) + 7) / 8 * 8;
  const size_t slots = std::bit_floor(std::max<size_t>(bytes / stride_, 64));
  mask_ = slots - 1;
  slots_.resize(slots * stride_);
}

uint8_t* KvEventQueue::claim() {
  const uint64_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) > mask_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return &slots_[(head & mask_) * stride_];
}

void KvEventQueue::stored(const BlockSignature& signature, const BlockSignature* parent, const int32_t* tokens) {
  uint8_t* slot = claim();
  if (!slot) return;
  Header h{KvEvent::Kind::kStored, parent != nullptr, signature, parent ? *parent : BlockSignature{}};
  std::memcpy(slot, &h, sizeof(h));
  std::memcpy(slot + sizeof(h), tokens, sizeof(int32_t) * size_t(block_size_));
  publish();
}

void KvEventQueue::removed(const BlockSignature& signature) {
  uint8_t* slot = claim();
  if (!slot) return;
  Header h{KvEvent::Kind::kRemoved, false, signature, {}};
  std::memcpy(slot, &h, sizeof(h));
  publish();
}

void KvEventQueue::cleared() {
  uint8_t* slot = claim();
  if (!slot) return;
  Header h{KvEvent::Kind::kCleared, false, {}, {}};
  std::memcpy(slot, &h, sizeof(h));
  publish();
}

size_t KvEventQueue::pop(std::vector<KvEvent>& out, size_t max) {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  const size_t n = std::min<uint64_t>(head_.load(std::memory_order_acquire) - tail, max);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* slot = &slots_[((tail + i) & mask_) * stride_];
    Header h;
    std::memcpy(&h, slot, sizeof(h));
    KvEvent& e = out.emplace_back();
    e.kind = h.kind;
    e.has_parent = h.has_parent;
    e.signature = h.signature;
    e.parent = h.parent;
    if (h.kind == KvEvent::Kind::kStored) {
      e.tokens.resize(size_t(block_size_));
      std::memcpy(e.tokens.data(), slot + sizeof(h), sizeof(int32_t) * size_t(block_size_));
    }
  }
  tail_.store(tail + n, std::memory_order_release);
  return n;
}

std::string encode_kv_event_batch(std::span<const KvEvent> events, double ts, int32_t block_size) {
  const std::vector<EventGroup> groups = group_events(events);
  MsgpackWriter w;
  w.array(3);
  w.float64(ts);
  w.array(static_cast<uint32_t>(groups.size()));
  for (const EventGroup& g : groups) {
    if (g.first->kind == KvEvent::Kind::kCleared) {
      w.map(1);
      w.str("type");
      w.str("AllBlocksCleared");
      continue;
    }
    const bool stored = g.first->kind == KvEvent::Kind::kStored;
    w.map(stored ? 8 : 3);
    w.str("type");
    w.str(stored ? "BlockStored" : "BlockRemoved");
    w.str("block_hashes");
    w.array(static_cast<uint32_t>(g.events.size()));
    for (const KvEvent* e : g.events) put_hash(w, e->signature);
    if (stored) {
      w.str("parent_block_hash");
      if (g.first->has_parent) put_hash(w, g.first->parent);
      else w.nil();
      w.str("token_ids");
      w.array(static_cast<uint32_t>(g.events.size() * size_t(block_size)));
      for (const KvEvent* e : g.events)
        for (int32_t t : e->tokens) w.integer(t);
      w.str("block_size");
      w.integer(block_size);
      w.str("lora_id");
      w.nil();
      w.str("lora_name");
      w.nil();
    }
    w.str("medium");
    w.str("GPU");
  }
  w.integer(0);  // data_parallel_rank
  return w.take();
}

class KvEventPublisher::Impl {
 public:
  explicit Impl(const KvEventsConfig& c) : config(c), queue(c.block_size, c.queue_bytes) {}
  ~Impl() {
    if (thread.joinable()) {
      stop.store(true);
      thread.join();
    }
    if (pub) zmq_close(pub);
    if (router) zmq_close(router);
    if (context) zmq_ctx_term(context);
  }

  Status open();
  void run();
  void publish(std::span<const KvEvent> events);
  void serve_replay();

  KvEventsConfig config;
  KvEventQueue queue;
  void* context = nullptr;
  void* pub = nullptr;
  void* router = nullptr;  // replay; null without replay_endpoint
  std::deque<std::pair<int64_t, std::string>> kept;  // (seq, payload), oldest first
  int64_t next_seq = 0;
  std::atomic<uint64_t> num_batches{0};
  uint64_t dropped_reported = 0;
  std::atomic<bool> stop{false};
  std::thread thread;
};

Status KvEventPublisher::Impl::open() {
  context = zmq_ctx_new();
  if (!context) return internal_error("kv events: zmq_ctx_new: ", zmq_strerror(errno));
  const int linger_ms = 200;  // at shutdown, the last batches still leave
  pub = zmq_socket(context, ZMQ_PUB);
  zmq_setsockopt(pub, ZMQ_LINGER, &linger_ms, sizeof(linger_ms));
  if (zmq_bind(pub, config.endpoint.c_str()) != 0)
    return invalid_argument("--kv-events-endpoint ", config.endpoint, ": ", zmq_strerror(errno));
  if (!config.replay_endpoint.empty()) {
    router = zmq_socket(context, ZMQ_ROUTER);
    zmq_setsockopt(router, ZMQ_LINGER, &linger_ms, sizeof(linger_ms));
    if (zmq_bind(router, config.replay_endpoint.c_str()) != 0)
      return invalid_argument("--kv-events-replay-endpoint ", config.replay_endpoint, ": ", zmq_strerror(errno));
  }
  return ok_status();
}

void KvEventPublisher::Impl::run() {
  std::vector<KvEvent> events;
  while (true) {
    const bool stopping = stop.load();
    zmq_pollitem_t item{router, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(router ? &item : nullptr, router ? 1 : 0, stopping ? 0 : kPollMilliseconds) > 0) serve_replay();
    while (queue.pop(events, kMaxEventsPerBatch) > 0) {
      publish(events);
      events.clear();
    }
    if (const uint64_t dropped = queue.num_dropped(); dropped != dropped_reported) {
      log_warn("kv events: ", dropped - dropped_reported, " events dropped (the queue of ", queue.capacity(),
               " was full); routers miss those blocks");
      dropped_reported = dropped;
    }
    if (stopping) return;
  }
}

void KvEventPublisher::Impl::publish(std::span<const KvEvent> events) {
  const double ts = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::string payload = encode_kv_event_batch(events, ts, config.block_size);
  const int64_t seq = next_seq++;
  const std::string seq_bytes = big_endian(seq);
  // A PUB socket drops what a slow subscriber cannot take; it never blocks.
  zmq_send(pub, config.topic.data(), config.topic.size(), ZMQ_SNDMORE);
  zmq_send(pub, seq_bytes.data(), seq_bytes.size(), ZMQ_SNDMORE);
  zmq_send(pub, payload.data(), payload.size(), 0);
  num_batches.fetch_add(1, std::memory_order_relaxed);
  if (!router) return;
  kept.emplace_back(seq, std::move(payload));
  if (kept.size() > config.replay_batches) kept.pop_front();
}

// One request per call: [identity, "", start_seq]. Anything else is dropped
// (the socket is open to the network: frames are checked, never trusted).
void KvEventPublisher::Impl::serve_replay() {
  std::vector<std::string> frames;
  int more = 1;
  while (more) {
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, router, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&msg);
      return;
    }
    more = zmq_msg_more(&msg);
    if (frames.size() < kMaxReplayRequestFrames)
      frames.emplace_back(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg));
    zmq_msg_close(&msg);
  }
  if (frames.size() != 3 || !frames[1].empty() || frames[2].size() != 8) return;
  int64_t start = 0;
  for (unsigned char c : frames[2]) start = int64_t((uint64_t(start) << 8) | c);
  const std::string& identity = frames[0];
  auto send = [&](std::string_view topic, int64_t seq, std::string_view payload) {
    const std::string seq_bytes = big_endian(seq);
    zmq_send(router, identity.data(), identity.size(), ZMQ_SNDMORE);
    zmq_send(router, "", 0, ZMQ_SNDMORE);
    zmq_send(router, topic.data(), topic.size(), ZMQ_SNDMORE);
    zmq_send(router, seq_bytes.data(), seq_bytes.size(), ZMQ_SNDMORE);
    zmq_send(router, payload.data(), payload.size(), 0);
  };
  for (const auto& [seq, payload] : kept)
    if (seq >= start) send(config.topic, seq, payload);
  send("", -1, "");  // the end of the replay
}

KvEventPublisher::KvEventPublisher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

KvEventPublisher::~KvEventPublisher() = default;

StatusOr<std::unique_ptr<KvEventPublisher>> KvEventPublisher::start(const KvEventsConfig& config) {
  if (config.block_size < 1) return invalid_argument("kv events: block size must be positive");
  auto impl = std::make_unique<Impl>(config);
  ZL_RETURN_IF_ERROR(impl->open());
  Impl* raw = impl.get();
  raw->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<KvEventPublisher>(new KvEventPublisher(std::move(impl)));
}

KvEventQueue& KvEventPublisher::queue() { return impl_->queue; }

uint64_t KvEventPublisher::num_batches() const { return impl_->num_batches.load(std::memory_order_relaxed); }

}  // namespace zl
