// Records of zerolayer/shm_protocol.h <-> the engine's types. A request
// record is first copied out of shared memory (so the client cannot change it
// under us), then every length, index, enum and float is checked before any
// of it is used; errors name the record field. Response records are filled
// from engine events here and published by the caller.
#pragma once

#include <cstdint>
#include <string_view>

#include "zerolayer/request.h"
#include "zerolayer/shm_protocol.h"
#include "zerolayer/status.h"

namespace zl {

struct WireLimits {
  int32_t vocab_size = 0;
  int32_t max_seq_len = 0;
  uint64_t server_start_ns = 0;  // a submit_ns before it is invalid
};

struct ChatMessage {
  std::string role;     // "system", "user", "assistant" or "tool"
  std::string content;  // UTF-8
};

struct WireRequest {
  std::vector<ChatMessage> chat;  // ZL_SHM_PROMPT_CHAT: the server renders and tokenizes these
  bool has_signature = false;
  uint8_t signature[16] = {};
  Request request;  // everything but the sink
};

// Copies the fixed part, then min(payload_bytes, capacity) payload bytes, so
// that a hostile length can neither overrun nor be re-read differently.
void copy_request_out(const zl_shm_request& shared, zl_shm_request* local);

// Validates a copied-out SUBMIT record (kind and client slot are the caller's).
// prompt_head: the prompt bytes its PROMPT_PART records brought (usually none).
Status decode_submit(const zl_shm_request& record, const WireLimits& limits, std::string_view prompt_head,
                     WireRequest* out);

// The most prompt bytes PROMPT_PART records may bring for one request.
uint64_t max_prompt_part_bytes(const WireLimits& limits, uint32_t prompt_kind);

// Response records. Text beyond ZL_SHM_RESPONSE_TEXT_BYTES is the caller's to
// send in TEXT records; these return how many bytes of `text` they took.
size_t fill_token(zl_shm_response& r, uint64_t client_request_id, const TokenEvent& event);
size_t fill_text(zl_shm_response& r, uint64_t client_request_id, std::string_view text);
void fill_finish(zl_shm_response& r, uint64_t client_request_id, const FinishEvent& event, uint32_t flags);
void fill_error(zl_shm_response& r, uint64_t client_request_id, const Status& status);

}  // namespace zl
