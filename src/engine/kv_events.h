// KV-cache events for routers: each block the prefix index gains
// (BlockStored: its cache signature, its parent's, its tokens) or loses
// (BlockRemoved), published over ZMQ in vLLM's wire format, so that
// `vllm-router --policy kv_aware` (and llm-d's scheduler) send a request to
// the replica already holding its longest prefix.
//
// Wire format (vLLM's KVEventBatch as vllm-router 0.1.17 reads it): a PUB
// socket sends [topic, seq (8 bytes, big-endian), payload]; payload is the
// msgpack array [ts (float64 seconds), [event, ...], data_parallel_rank (0)];
// each event a map tagged by "type":
//   BlockStored  {block_hashes, parent_block_hash, token_ids, block_size,
//                 lora_id: nil, medium: "GPU", lora_name: nil}
//   BlockRemoved {block_hashes, medium: "GPU"}
//   AllBlocksCleared {} (the engine reloaded its model: the pool is empty)
// A block hash is the block's 16-byte cache signature (put_signature's
// bytes, msgpack bin), its parent the previous block's (nil for a prompt's
// first block), as vLLM chains its block hashes. Consecutive blocks of one
// sequence go in one BlockStored. "GPU" is vLLM's name for the primary KV
// pool, wherever ours lives. An optional ROUTER socket replays recent batches:
// a request [identity, "", start_seq (8 bytes)] gets every kept batch from
// start_seq as [identity, "", topic, seq, payload], then [identity, "", "",
// seq = -1, ""].
//
// The engine thread only writes a fixed-size record into a single-producer
// ring (KvEventQueue::stored/removed: no lock, no allocation); a publisher
// thread encodes and sends. A full ring drops the event and counts it (the
// router then misses one block: a worse route, never a wrong answer).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_pool.h"
#include "zerolayer/status.h"

namespace zl {

struct KvEventsConfig {
  std::string endpoint;         // PUB binds here, e.g. tcp://*:5557
  std::string replay_endpoint;  // ROUTER binds here ("": no replay)
  std::string topic;            // vllm-router reads topic "" only
  int32_t block_size = 16;
  size_t queue_bytes = 16u << 20;  // the ring's records
  size_t replay_batches = 10000;   // batches kept for replay
};

struct KvEvent {
  enum class Kind : uint8_t { kStored, kRemoved, kCleared };
  Kind kind = Kind::kStored;
  bool has_parent = false;
  BlockSignature signature;
  BlockSignature parent;
  std::vector<int32_t> tokens;  // kStored: the block's
};

// Engine thread -> publisher thread, one producer and one consumer.
class KvEventQueue {
 public:
  KvEventQueue(int32_t block_size, size_t bytes);
  KvEventQueue(const KvEventQueue&) = delete;
  KvEventQueue& operator=(const KvEventQueue&) = delete;

  // Producer (the engine thread). parent: nullptr for a sequence's first block.
  void stored(const BlockSignature& signature, const BlockSignature* parent, const int32_t* tokens);
  void removed(const BlockSignature& signature);
  void cleared();

  // Consumer: appends up to max events to out; returns how many.
  size_t pop(std::vector<KvEvent>& out, size_t max);
  uint64_t num_dropped() const { return dropped_.load(std::memory_order_relaxed); }
  size_t capacity() const { return mask_ + 1; }

 private:
  struct Header {
    KvEvent::Kind kind;
    bool has_parent;
    BlockSignature signature;
    BlockSignature parent;
  };
  // A free slot for the producer, or nullptr (full: the event is dropped).
  uint8_t* claim();
  void publish() { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  int32_t block_size_;
  size_t stride_;
  size_t mask_;
  std::vector<uint8_t> slots_;
  alignas(64) std::atomic<uint64_t> head_{0};  // written by the producer
  alignas(64) std::atomic<uint64_t> tail_{0};  // written by the consumer
  std::atomic<uint64_t> dropped_{0};
};

// The msgpack payload of one batch (see the top of this file).
std::string encode_kv_event_batch(std::span<const KvEvent> events, double ts, int32_t block_size);

class KvEventPublisher {
 public:
  static StatusOr<std::unique_ptr<KvEventPublisher>> start(const KvEventsConfig& config);
  ~KvEventPublisher();  // sends what is queued, then stops
  KvEventPublisher(const KvEventPublisher&) = delete;
  KvEventPublisher& operator=(const KvEventPublisher&) = delete;

  KvEventQueue& queue();
  uint64_t num_batches() const;

  class Impl;

 private:
  explicit KvEventPublisher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace zl
