// The shared-memory target: one client slot (zl_client) per session, so one
// request in flight per worker thread. Times come from the client's own
// CLOCK_MONOTONIC reads: TTFT at the first TOKEN record, ITL between TOKEN
// records (one per token here, unlike HTTP chunks), E2E at the FINISH record.
#include <chrono>
#include <ctime>

#include "loadgen/target.h"
#include "zerolayer/client.h"

namespace zl::loadgen {
namespace {

constexpr int kEventTimeoutMs = 600000;  // the client fails sooner if the server dies

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

class ShmSession : public Session {
 public:
  explicit ShmSession(zl_client* client) : client_(client) {}
  ~ShmSession() override { zl_client_close(client_); }

  void run(const BenchRequest& request, RequestResult* r) override {
    zl_request req;
    zl_request_init(&req);
    if (!request.prompt_ids.empty()) {
      req.prompt_ids = request.prompt_ids.data();
      req.num_prompt_ids = static_cast<uint32_t>(request.prompt_ids.size());
    } else {
      req.prompt_text = request.prompt_text.c_str();
      req.prompt_text_bytes = static_cast<uint32_t>(request.prompt_text.size());
    }
    req.sampling.temperature = 0;
    req.max_new_tokens = request.output_len;
    req.ignore_eos = 1;
    const uint64_t sent_ns = monotonic_ns();
    uint64_t id = 0;
    int rc = zl_client_submit(client_, &req, &id);
    if (rc != ZL_OK) return fail(r, rc);
    uint64_t last_ns = 0;
    zl_event ev;
    for (;;) {
      rc = zl_client_next_event(client_, &ev, kEventTimeoutMs);
      if (rc != ZL_OK) return fail(r, rc);
      const zl_shm_response& rec = ev.record;
      if (rec.client_request_id != id) continue;
      if (rec.kind == ZL_SHM_RESPONSE_TOKEN) {
        if (last_ns == 0) r->ttft_s = (ev.read_ns - sent_ns) * 1e-9;
        else r->itl_s.push_back((ev.read_ns - last_ns) * 1e-9);
        last_ns = ev.read_ns;
      } else if (rec.kind == ZL_SHM_RESPONSE_ERROR) {
        r->error = "shm error: " + std::string(rec.text, rec.text_bytes);
        return;
      } else if (rec.kind == ZL_SHM_RESPONSE_FINISH) {
        if (rec.finish_reason == ZL_SHM_FINISH_ERROR || rec.finish_reason == ZL_SHM_FINISH_ABORTED) {
          r->error = "shm finish: " + std::string(rec.text, rec.text_bytes);
          return;
        }
        r->success = last_ns != 0;
        if (!r->success) r->error = "finished without a token";
        r->e2e_s = (ev.read_ns - sent_ns) * 1e-9;
        r->prompt_tokens = rec.num_prompt_tokens;
        r->output_tokens = rec.num_generated_tokens;
        r->queue_s = rec.queue_s;
        return;
      }
    }
  }

 private:
  void fail(RequestResult* r, int rc) {
    r->success = false;
    r->error = std::string("shm ") + zl_status_name(rc) + ": " + zl_client_last_error(client_);
  }

  zl_client* client_;
};

class ShmTarget : public Target {
 public:
  ShmTarget(std::string name, int max_clients) : name_(std::move(name)), max_clients_(max_clients) {}
  StatusOr<std::unique_ptr<Session>> open_session() override {
    zl_client* client = nullptr;
    if (zl_client_connect(name_.c_str(), &client) != ZL_OK)
      return not_found("--shm-name ", name_, ": ", zl_client_last_error(nullptr));
    return std::unique_ptr<Session>(std::make_unique<ShmSession>(client));
  }
  int max_sessions() const override { return max_clients_; }

 private:
  std::string name_;
  int max_clients_;
};

}  // namespace

StatusOr<std::unique_ptr<Target>> make_shm_target(const std::string& shm_name, int max_clients) {
  if (max_clients < 1) return invalid_argument("--shm-max-clients must be at least 1");
  auto target = std::make_unique<ShmTarget>(shm_name, max_clients);
  // Connect once now so a wrong name fails before any timing starts.
  auto probe = target->open_session();
  if (!probe.ok()) return probe.status();
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace zl::loadgen
