// One /v1/completions request in flight: the bridge between the engine
// thread and the connection that asked.
//
// Flow: start() (on the connection's strand) submits prompts x n engine
// requests, each with its own Sink. The engine's output stage calls the sinks; they
// never block: each event becomes a node on a lock-free list (a Treiber
// stack, reversed when drained) and, if no drain is pending, one drain is
// posted to the strand. drain() then turns everything that arrived into SSE
// chunks (one per choice per drain, so a burst of tokens costs one write) or,
// without streaming, into the single response once every choice finished.
//
// Ownership: the job holds its writer (connection); the connection holds the
// job through its on-close callback. The cycle is cut when the response is
// complete or the connection closes. Sinks hold the job weakly, so the engine
// never keeps a connection alive; a client that disconnects gets its engine
// requests aborted (their KV memory goes back to the pool at once).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "server/openai_api.h"
#include "server/response_writer.h"
#include "server/responses_api.h"
#include "zerolayer/engine.h"

namespace zl::server {

// Closed at shutdown so the engine's output stage stops posting into an io_context
// that is about to go away: enter() fails once closed, and close() waits for
// the callers already inside to leave (a few instructions each).
class PostGate {
 public:
  bool enter();
  void leave();
  void close();

 private:
  std::atomic<int32_t> num_inside_{0};
  std::atomic<bool> open_{true};
};

class CompletionJob;

// The jobs in flight, so shutdown can abort them and wait for their ends. A
// job leaves it when it completes or is destroyed, whichever comes first.
class JobRegistry {
 public:
  void add(const std::shared_ptr<CompletionJob>& job);
  void remove(const CompletionJob* job);
  // Asks every live job to abort what it has not finished.
  void abort_all();
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::map<const CompletionJob*, std::weak_ptr<CompletionJob>> jobs_;
};

struct JobContext {
  Engine* engine = nullptr;
  std::shared_ptr<PostGate> gate;
  JobRegistry* registry = nullptr;
  std::atomic<int64_t>* num_disconnects = nullptr;  // clients gone before their response ended
  RequestOrigin origin;  // kHttp, the response's number, when its body had arrived (latency breakdown)
  ResponseStore* responses = nullptr;  // POST /v1/responses: where stored responses go
};

class CompletionJob : public std::enable_shared_from_this<CompletionJob> {
 public:
  CompletionJob(JobContext context, std::shared_ptr<ResponseWriter> writer, CompletionRequest request,
                ResponseMeta meta);
  ~CompletionJob();
  CompletionJob(const CompletionJob&) = delete;
  CompletionJob& operator=(const CompletionJob&) = delete;

  // On the strand: submits every choice, then opens the stream; on a submit
  // error aborts the choices already submitted and answers the error.
  void start();
  // Any thread: aborts the unfinished choices (their final chunks still go out).
  void request_abort();

 private:
  struct Node;
  class Sink;

  void push(Node* node);  // the engine's output stage (engine/output_stage.h)
  void drain();           // strand
  void apply(Node& node);
  void abort_unfinished();
  void on_disconnect();
  void write_stream_pieces();
  void split_reasoning(size_t index, ChoiceOutput& c);
  void hold_tool_calls(size_t index, ChoiceOutput& c);
  void write_token_chunks(int32_t index, const ChoiceOutput& c);
  void answer_response();
  void store_response(const ChoiceOutput& whole);
  void answer_whole();
  void complete();
  AccessUsage usage() const;

  JobContext context_;
  std::shared_ptr<ResponseWriter> writer_;
  CompletionRequest request_;
  ResponseMeta meta_;
  const Tokenizer& tokenizer_;

  // Strand only.
  std::vector<RequestId> ids_;
  std::vector<ChoiceOutput> choices_;  // streaming: what arrived since the last chunk
  std::vector<uint8_t> finished_;
  std::vector<ReasoningSplitter> reasoning_;  // per choice, with a reasoning parser
  std::vector<ToolCallStream> tool_streams_;  // per choice, with a tool parser: text held while it may be a call
  std::unique_ptr<ResponseEventStream> response_events_;  // a streamed POST /v1/responses
  size_t num_finished_ = 0;
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  bool done_ = false;  // the response is complete (or failed); later events are dropped

  // Engine thread -> strand.
  std::atomic<Node*> head_{nullptr};
  std::atomic<bool> drain_posted_{false};
};

}  // namespace zl::server
