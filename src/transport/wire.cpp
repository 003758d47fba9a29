#include "transport/wire.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_text.h"
#include "transport/shm_ring.h"
#include "zerolayer/request_fields.h"
#include "zerolayer/sampling.h"

namespace zl {
namespace {

bool valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    size_t n = utf8_valid_len(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

Status check_bool(const char* field, uint32_t value) {
  if (value > 1) return invalid_argument(field, " must be 0 or 1, got ", value);
  return ok_status();
}

SamplingParams to_sampling(const zl_shm_sampling& s) {
  SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  p.repetition_penalty = s.repetition_penalty;
  p.presence_penalty = s.presence_penalty;
  p.frequency_penalty = s.frequency_penalty;
  p.has_seed = s.has_seed != 0;
  p.seed = s.seed;
  p.num_top_logprobs = s.num_top_logprobs;
  return p;
}

// The payload's lengths, each checked against what is left of it.
class PayloadReader {
 public:
  PayloadReader(const uint8_t* data, uint32_t size) : data_(data), left_(size) {}
  Status take(const char* field, uint64_t bytes, const uint8_t** out) {
    if (bytes > left_)
      return invalid_argument(field, " (", bytes, " bytes) runs past the end of the payload (", left_, " left)");
    *out = data_;
    data_ += bytes;
    left_ -= uint32_t(bytes);
    return ok_status();
  }
  uint32_t left() const { return left_; }

 private:
  const uint8_t* data_;
  uint32_t left_;
};

// Chat messages: (uint32 role, uint32 length, bytes)... filling all `size` bytes.
Status decode_chat(const uint8_t* data, uint32_t size, std::vector<ChatMessage>* out) {
  static const char* const kRoles[] = {"system", "user", "assistant", "tool"};
  PayloadReader reader(data, size);
  while (reader.left() > 0) {
    const uint8_t* p = nullptr;
    uint32_t header[2];
    ZL_RETURN_IF_ERROR(reader.take("chat message header", sizeof(header), &p));
    std::memcpy(header, p, sizeof(header));
    if (header[0] > ZL_SHM_ROLE_TOOL)
      return invalid_argument("chat message ", out->size(), ": role must be 0..3 (system, user, assistant, tool), got ",
                              header[0]);
    ZL_RETURN_IF_ERROR(reader.take("chat message content length", header[1], &p));
    ChatMessage& m = out->emplace_back();
    m.role = kRoles[header[0]];
    m.content.assign(reinterpret_cast<const char*>(p), header[1]);
    if (!valid_utf8(m.content)) return invalid_argument("chat message ", out->size() - 1, ": content is not valid UTF-8");
  }
  if (out->empty()) return invalid_argument("chat: no messages");
  return ok_status();
}

// The structured output of a request: its kind and spec (zl_shm_structured_kind).
Status decode_structured(const zl_shm_request& r, std::string_view spec, StructuredOutput* out) {
  using Kind = StructuredOutput::Kind;
  if (r.structured_kind > ZL_SHM_STRUCTURED_TAG)
    return invalid_argument("structured_kind must be 0..6 (zl_shm_structured_kind), got ", r.structured_kind);
  out->kind = static_cast<Kind>(r.structured_kind);
  out->field = "structured_output";
  const bool needs_spec = out->kind != Kind::kNone && out->kind != Kind::kJsonObject;
  if (needs_spec != !spec.empty())
    return invalid_argument("structured_bytes is ", spec.size(), needs_spec ? ": this structured_kind needs a spec"
                                                                            : ": this structured_kind takes none");
  if (!valid_utf8(spec)) return invalid_argument("structured output spec is not valid UTF-8");
  if (out->kind != Kind::kChoice) {
    out->spec.assign(spec);
    return ok_status();
  }
  const nlohmann::json list = nlohmann::json::parse(spec, nullptr, false);
  if (!list.is_array()) return invalid_argument("structured output spec of a CHOICE must be a JSON list of strings");
  for (const nlohmann::json& choice : list) {
    if (!choice.is_string()) return invalid_argument("structured output spec of a CHOICE must be a JSON list of strings");
    out->choices.push_back(choice.get<std::string>());
  }
  return ok_status();
}

// The prompt's bytes: `head` (sent before in PROMPT_PART records), then the
// rest from this record's payload; joined only when there is a head.
Status take_prompt(PayloadReader& payload, const zl_shm_request& r, std::string_view head, std::string* joined,
                   const uint8_t** p) {
  const uint64_t total = uint64_t(r.prompt_count) * (r.prompt_kind == ZL_SHM_PROMPT_TOKENS ? 4 : 1);
  if (head.size() > total)
    return invalid_argument("prompt_bytes_in_parts ", head.size(), " exceeds the prompt's ", total, " bytes");
  ZL_RETURN_IF_ERROR(payload.take("prompt_count", total - head.size(), p));
  if (head.empty()) return ok_status();
  joined->reserve(total);
  joined->assign(head);
  joined->append(reinterpret_cast<const char*>(*p), total - head.size());
  *p = reinterpret_cast<const uint8_t*>(joined->data());
  return ok_status();
}

Status decode_payload(const zl_shm_request& r, const WireLimits& limits, std::string_view head, WireRequest* out) {
  Request& req = out->request;
  PayloadReader payload(r.payload, r.payload_bytes);
  const uint8_t* p = nullptr;
  std::string joined;
  ZL_RETURN_IF_ERROR(take_prompt(payload, r, head, &joined, &p));
  if (r.prompt_kind == ZL_SHM_PROMPT_TOKENS) {
    req.prompt_ids.resize(r.prompt_count);
    std::memcpy(req.prompt_ids.data(), p, uint64_t(r.prompt_count) * 4);
    ZL_RETURN_IF_ERROR(check_token_ids("prompt", req.prompt_ids, limits.vocab_size));
  } else if (r.prompt_kind == ZL_SHM_PROMPT_CHAT) {
    ZL_RETURN_IF_ERROR(decode_chat(p, r.prompt_count, &out->chat));
  } else {
    req.prompt_text.assign(reinterpret_cast<const char*>(p), r.prompt_count);
    if (!valid_utf8(req.prompt_text)) return invalid_argument("prompt text is not valid UTF-8");
  }
  ZL_RETURN_IF_ERROR(payload.take("num_stop_token_ids", uint64_t(r.num_stop_token_ids) * 4, &p));
  req.stop_token_ids.resize(r.num_stop_token_ids);
  if (r.num_stop_token_ids > 0) std::memcpy(req.stop_token_ids.data(), p, uint64_t(r.num_stop_token_ids) * 4);
  ZL_RETURN_IF_ERROR(check_token_ids("stop_token_ids", req.stop_token_ids, limits.vocab_size));
  for (uint32_t i = 0; i < r.num_stop; ++i) {
    if (r.stop_bytes[i] == 0) return invalid_argument("stop_bytes[", i, "] is 0: stop strings must not be empty");
    ZL_RETURN_IF_ERROR(payload.take("stop_bytes", r.stop_bytes[i], &p));
    req.stop.emplace_back(reinterpret_cast<const char*>(p), r.stop_bytes[i]);
    ZL_RETURN_IF_ERROR(check_text_bytes("stop", req.stop.back(), kMaxStopBytes));
    if (!valid_utf8(req.stop.back())) return invalid_argument("stop string ", i, " is not valid UTF-8");
  }
  ZL_RETURN_IF_ERROR(payload.take("cache_salt_bytes", r.cache_salt_bytes, &p));
  req.cache_salt.assign(reinterpret_cast<const char*>(p), r.cache_salt_bytes);
  ZL_RETURN_IF_ERROR(payload.take("structured_bytes", r.structured_bytes, &p));
  ZL_RETURN_IF_ERROR(decode_structured(r, std::string_view(reinterpret_cast<const char*>(p), r.structured_bytes),
                                       &req.structured_output));
  ZL_RETURN_IF_ERROR(payload.take("num_logit_bias", uint64_t(r.num_logit_bias) * sizeof(zl_shm_logit_bias), &p));
  req.sampling.logit_bias.resize(r.num_logit_bias);
  for (uint32_t i = 0; i < r.num_logit_bias; ++i) {
    zl_shm_logit_bias entry;
    std::memcpy(&entry, p + i * sizeof(entry), sizeof(entry));
    req.sampling.logit_bias[i] = {entry.id, entry.bias};
  }
  // Ids, ranges (NaN included), each id once: as on HTTP.
  ZL_RETURN_IF_ERROR(validate_sampling(req.sampling, limits.vocab_size));
  if (payload.left() != 0)
    return invalid_argument("payload_bytes is ", r.payload_bytes, " but the fields account for ",
                            r.payload_bytes - payload.left());
  return ok_status();
}

}  // namespace

uint64_t max_prompt_part_bytes(const WireLimits& limits, uint32_t prompt_kind) {
  // Ids take 4 bytes a token; text and chat allow for long tokens and markup.
  return uint64_t(std::max(limits.max_seq_len, 0)) * (prompt_kind == ZL_SHM_PROMPT_TOKENS ? 4 : uint64_t(kMaxPromptBytesPerToken));
}

void copy_request_out(const zl_shm_request& shared, zl_shm_request* local) {
  std::memcpy(local, &shared, ZL_SHM_REQUEST_FIXED_BYTES);
  uint32_t n = std::min<uint32_t>(local->payload_bytes, ZL_SHM_REQUEST_PAYLOAD_BYTES);
  std::memcpy(local->payload, shared.payload, n);
}

Status decode_submit(const zl_shm_request& r, const WireLimits& limits, std::string_view prompt_head,
                     WireRequest* out) {
  if (r.prompt_bytes_in_parts != prompt_head.size())
    return invalid_argument("prompt_bytes_in_parts is ", r.prompt_bytes_in_parts, " but ", prompt_head.size(),
                            " bytes arrived in PROMPT_PART records");
  if (r.prompt_kind < ZL_SHM_PROMPT_TOKENS || r.prompt_kind > ZL_SHM_PROMPT_CHAT)
    return invalid_argument("prompt_kind must be 1 (tokens), 2 (text) or 3 (chat), got ", r.prompt_kind);
  if (r.prompt_count == 0) return invalid_argument("prompt_count is 0: the prompt is empty");
  if (r.payload_bytes > ZL_SHM_REQUEST_PAYLOAD_BYTES)
    return invalid_argument("payload_bytes ", r.payload_bytes, " exceeds the record's ", ZL_SHM_REQUEST_PAYLOAD_BYTES);
  if (r.num_stop > ZL_SHM_MAX_STOP) return invalid_argument("num_stop ", r.num_stop, " exceeds ", ZL_SHM_MAX_STOP);
  static_assert(ZL_SHM_MAX_STOP_TOKEN_IDS == kMaxStopTokenIds, "HTTP and shared memory take as many stop ids");
  if (r.num_stop_token_ids > ZL_SHM_MAX_STOP_TOKEN_IDS)
    return invalid_argument("num_stop_token_ids ", r.num_stop_token_ids, " exceeds ", ZL_SHM_MAX_STOP_TOKEN_IDS);
  static_assert(ZL_SHM_MAX_CACHE_SALT_BYTES == kMaxCacheSaltBytes, "HTTP and shared memory take as long a salt");
  if (r.cache_salt_bytes > ZL_SHM_MAX_CACHE_SALT_BYTES)
    return invalid_argument("cache_salt_bytes ", r.cache_salt_bytes, " exceeds ", ZL_SHM_MAX_CACHE_SALT_BYTES);
  if (r.num_logit_bias > ZL_SHM_MAX_LOGIT_BIAS)
    return invalid_argument("num_logit_bias ", r.num_logit_bias, " exceeds ", ZL_SHM_MAX_LOGIT_BIAS);
  ZL_RETURN_IF_ERROR(check_bool("ignore_eos", r.ignore_eos));
  ZL_RETURN_IF_ERROR(check_bool("has_signature", r.has_signature));
  ZL_RETURN_IF_ERROR(check_bool("keep_special_tokens", r.keep_special_tokens));
  ZL_RETURN_IF_ERROR(check_bool("sampling.has_seed", r.sampling.has_seed));
  if (r.sampling.reserved != 0) return invalid_argument("sampling.reserved must be 0");
  ZL_RETURN_IF_ERROR(check_field(field::kMaxTokens, r.max_new_tokens, limits.max_seq_len, FieldName::kRecord));
  ZL_RETURN_IF_ERROR(check_field(field::kMinTokenProb, r.min_token_prob));
  if (r.submit_ns != 0) {
    const uint64_t now = shm::now_ns();
    if (r.submit_ns > now)
      return invalid_argument("submit_ns ", r.submit_ns, " is later than the server's CLOCK_MONOTONIC (", now, ")");
    if (r.submit_ns < limits.server_start_ns)
      return invalid_argument("submit_ns ", r.submit_ns, " is before the server started (", limits.server_start_ns, ")");
  }
  Request& req = out->request;
  req.origin = RequestOrigin{Transport::kShm, r.client_request_id, r.submit_ns};
  req.sampling = to_sampling(r.sampling);
  ZL_RETURN_IF_ERROR(validate_sampling(req.sampling, limits.vocab_size).with_prefix("sampling"));
  req.max_new_tokens = r.max_new_tokens;
  req.priority = r.priority;
  req.min_token_prob = r.min_token_prob;
  req.ignore_eos = r.ignore_eos != 0;
  req.skip_special_tokens = r.keep_special_tokens == 0;
  out->has_signature = r.has_signature != 0;
  std::memcpy(out->signature, r.signature, sizeof(out->signature));
  return decode_payload(r, limits, prompt_head, out);
}

size_t fill_text(zl_shm_response& r, uint64_t client_request_id, std::string_view text) {
  r.kind = ZL_SHM_RESPONSE_TEXT;
  r.client_request_id = client_request_id;
  r.token = -1;
  r.num_top_logprobs = 0;
  r.flags = 0;
  size_t n = std::min<size_t>(text.size(), ZL_SHM_RESPONSE_TEXT_BYTES);
  if (n > 0) std::memcpy(r.text, text.data(), n);  // an empty view may have no data
  r.text_bytes = uint32_t(n);
  r.sink_ns = shm::now_ns();
  return n;
}

size_t fill_token(zl_shm_response& r, uint64_t client_request_id, const TokenEvent& event) {
  size_t n = fill_text(r, client_request_id, event.text);
  r.kind = ZL_SHM_RESPONSE_TOKEN;
  r.token = event.token;
  r.logprob = event.logprob;
  uint32_t num_top = uint32_t(std::min<size_t>(event.top_logprobs.size(), ZL_SHM_MAX_TOP_LOGPROBS));
  for (uint32_t i = 0; i < num_top; ++i) r.top[i] = {event.top_logprobs[i].id, event.top_logprobs[i].logprob};
  r.num_top_logprobs = num_top;
  return n;
}

void fill_finish(zl_shm_response& r, uint64_t client_request_id, const FinishEvent& event, uint32_t flags) {
  fill_text(r, client_request_id, event.stop_detail);
  r.kind = ZL_SHM_RESPONSE_FINISH;
  r.token = event.stop_token;
  r.finish_reason = uint32_t(event.reason);
  r.num_prompt_tokens = event.num_prompt_tokens;
  r.num_cached_prompt_tokens = event.num_cached_prompt_tokens;
  r.num_generated_tokens = event.num_generated_tokens;
  r.num_preemptions = event.num_preemptions;
  r.queue_s = event.timings.queue_s;
  r.prefill_s = event.timings.prefill_s;
  r.first_token_s = event.timings.first_token_s;
  r.finish_s = event.timings.finish_s;
  r.flags = flags;
}

void fill_error(zl_shm_response& r, uint64_t client_request_id, const Status& status) {
  fill_text(r, client_request_id, status.message());
  r.kind = ZL_SHM_RESPONSE_ERROR;
  r.status_code = uint32_t(status.code());
  r.finish_reason = ZL_SHM_FINISH_ERROR;
}

}  // namespace zl
