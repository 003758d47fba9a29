#include "server/completion_job.h"

#include <optional>
#include <thread>
#include <utility>

#include "server/sse.h"

namespace zl::server {

bool PostGate::enter() {
  num_inside_.fetch_add(1);
  if (open_.load()) return true;
  num_inside_.fetch_sub(1);
  return false;
}

void PostGate::leave() { num_inside_.fetch_sub(1); }

void PostGate::close() {
  open_.store(false);
  while (num_inside_.load() != 0) std::this_thread::yield();
}

void JobRegistry::add(const std::shared_ptr<CompletionJob>& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_[job.get()] = job;
}

void JobRegistry::remove(const CompletionJob* job) {
  std::lock_guard<std::mutex> lock(mutex_);
  jobs_.erase(job);
}

void JobRegistry::abort_all() {
  std::vector<std::shared_ptr<CompletionJob>> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [ptr, weak] : jobs_)
      if (auto job = weak.lock()) live.push_back(std::move(job));
  }
  for (auto& job : live) job->request_abort();
}

size_t JobRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.size();
}

struct CompletionJob::Node {
  Node* next = nullptr;
  size_t choice = 0;
  bool is_finish = false;
  TokenEvent token;
  FinishEvent finish;
};

class CompletionJob::Sink : public EventSink {
 public:
  Sink(std::weak_ptr<CompletionJob> job, size_t choice) : job_(std::move(job)), choice_(choice) {}
  void on_token(const TokenEvent& event) override {
    if (auto job = job_.lock()) job->push(new Node{nullptr, choice_, false, event, {}});
  }
  void on_finish(const FinishEvent& event) override {
    if (auto job = job_.lock()) job->push(new Node{nullptr, choice_, true, {}, event});
  }

 private:
  std::weak_ptr<CompletionJob> job_;
  size_t choice_;
};

CompletionJob::CompletionJob(JobContext context, std::shared_ptr<ResponseWriter> writer, CompletionRequest request,
                             ResponseMeta meta)
    : context_(std::move(context)),
      writer_(std::move(writer)),
      request_(std::move(request)),
      meta_(std::move(meta)),
      tokenizer_(context_.engine->tokenizer()) {}

CompletionJob::~CompletionJob() {
  // A job whose client left goes when the connection drops its on-close
  // callback, before its aborted choices finish: complete() never runs.
  context_.registry->remove(this);
  Node* node = head_.exchange(nullptr);
  while (node) {
    Node* next = node->next;
    delete node;
    node = next;
  }
}

void CompletionJob::start() {
  const size_t n = static_cast<size_t>(request_.n);
  const size_t total = request_.prompts.size() * n;
  choices_.resize(total);
  finished_.assign(total, 0);
  if (request_.reasoning) reasoning_.assign(total, ReasoningSplitter(*request_.reasoning, request_.reasoning_opened));
  if (request_.tool_format) tool_streams_.assign(total, ToolCallStream(*request_.tool_format));
  context_.registry->add(shared_from_this());
  for (size_t index = 0; index < total; ++index) {
    Request r = make_engine_request(request_, index / n, static_cast<int32_t>(index % n));
    r.sink = std::make_shared<Sink>(weak_from_this(), index);
    r.origin = context_.origin;
    StatusOr<RequestId> id = context_.engine->submit(std::move(r));
    if (!id.ok()) {
      done_ = true;
      for (RequestId submitted : ids_) context_.engine->abort(submitted);
      ApiError error = submit_error(id.status());
      HttpHeaders headers;
      if (error.http_status == 503) headers.emplace_back("Retry-After", "1");
      writer_->respond(error.http_status, "application/json", error_body(error), std::move(headers));
      context_.registry->remove(this);
      return;
    }
    ids_.push_back(*id);
  }
  writer_->set_on_close([self = shared_from_this()] { self->on_disconnect(); });
  if (!request_.stream) return;
  writer_->begin_stream();
  if (request_.responses) {
    response_events_ = std::make_unique<ResponseEventStream>(meta_, *request_.responses);
    return writer_->write_raw(http_chunk(response_events_->begin()));
  }
  for (size_t i = 0; i < total; ++i) {
    const int32_t index = static_cast<int32_t>(i);
    if (request_.chat) writer_->write_raw(sse_chunk(chat_role_chunk(meta_, index)));
    if (!request_.echo) continue;
    ChoiceOutput prompt;  // echo: the prompt's text (chat: the continued message's), ahead of the first token
    prompt.text = request_.chat ? request_.chat_echo : echo_text(request_, index, tokenizer_);
    if (prompt.text.empty()) continue;
    writer_->write_raw(sse_chunk(completion_chunk(meta_, index, prompt, request_, tokenizer_)));
    choices_[i].text_offset = static_cast<int64_t>(prompt.text.size());
  }
}

void CompletionJob::request_abort() {
  writer_->post([self = shared_from_this()] { self->abort_unfinished(); });
}

void CompletionJob::abort_unfinished() {
  for (size_t i = 0; i < ids_.size(); ++i)
    if (!finished_[i]) context_.engine->abort(ids_[i]);
}

void CompletionJob::on_disconnect() {
  if (done_) return;
  context_.num_disconnects->fetch_add(1, std::memory_order_relaxed);
  abort_unfinished();
}

void CompletionJob::push(Node* node) {
  node->next = head_.load(std::memory_order_relaxed);
  while (!head_.compare_exchange_weak(node->next, node, std::memory_order_release, std::memory_order_relaxed)) {
  }
  if (drain_posted_.exchange(true, std::memory_order_acq_rel)) return;
  if (!context_.gate->enter()) return;
  writer_->post([self = shared_from_this()] { self->drain(); });
  context_.gate->leave();
}

void CompletionJob::drain() {
  // Cleared before taking the list: an event pushed after this posts again.
  drain_posted_.store(false, std::memory_order_release);
  Node* node = head_.exchange(nullptr, std::memory_order_acquire);
  Node* ordered = nullptr;  // the stack is newest first
  while (node) {
    Node* next = node->next;
    node->next = ordered;
    ordered = node;
    node = next;
  }
  while (ordered) {
    Node* next = ordered->next;
    apply(*ordered);
    delete ordered;
    ordered = next;
  }
  if (done_) return;
  const bool all_finished = num_finished_ == choices_.size();
  if (writer_->is_closed()) {
    if (all_finished) complete();
    return;
  }
  if (all_finished) writer_->note_usage(usage());
  if (request_.stream) {
    write_stream_pieces();
    if (!all_finished) return;
    if (response_events_) {
      store_response(response_events_->whole());
    } else {
      if (request_.include_usage) writer_->write_raw(sse_chunk(usage_chunk(meta_, prompt_tokens_, completion_tokens_)));
      writer_->write_raw(sse_done_chunk());
    }
    writer_->end_stream();
    complete();
  } else if (all_finished) {
    answer_whole();
    complete();
  }
}

void CompletionJob::apply(Node& node) {
  if (done_ || node.choice >= choices_.size()) return;
  ChoiceOutput& c = choices_[node.choice];
  if (!node.is_finish) {
    c.text += node.token.text;
    c.token_ids.push_back(node.token.token);
    c.num_tokens++;
    if (request_.want_logprobs || request_.stream || request_.reasoning) c.token_texts.push_back(node.token.text);
    if (request_.want_logprobs) {
      c.token_logprobs.push_back(node.token.logprob);
      c.top_logprobs.push_back(std::move(node.token.top_logprobs));
    }
    return;
  }
  if (finished_[node.choice]) return;
  std::string tail = node.finish.remaining_text;
  if (request_.include_stop_str) tail += node.finish.stop_string;
  c.text += tail;
  if (!c.token_texts.empty()) c.token_texts.back() += tail;
  finished_[node.choice] = 1;
  ++num_finished_;
  completion_tokens_ += node.finish.num_generated_tokens;
  if (node.choice % static_cast<size_t>(request_.n) == 0) prompt_tokens_ += node.finish.num_prompt_tokens;
  c.finish = std::move(node.finish);
}

// With a reasoning parser, the <think> part of the text moves to `reasoning`
// (a tag cut by the end of this piece waits in the splitter).
// Fed a token's text at a time where the pieces are known, so that each
// token inside the reasoning (or adding to it) counts as a reasoning token.
void CompletionJob::split_reasoning(size_t index, ChoiceOutput& c) {
  ReasoningSplitter& splitter = reasoning_[index];
  const std::string text = std::move(c.text);
  c.text.clear();
  if (!c.token_ids.empty() && c.token_texts.size() == c.token_ids.size()) {
    for (const std::string& piece : c.token_texts) {
      const size_t before = c.reasoning.size();
      const bool inside = splitter.in_reasoning();
      splitter.feed(piece, c.reasoning, c.text);
      c.reasoning_tokens += inside || c.reasoning.size() > before ? 1 : 0;
    }
  } else {
    splitter.feed(text, c.reasoning, c.text);
  }
  if (c.finish) splitter.finish(c.reasoning, c.text);
}

// With a tool parser, text that may begin a call waits in `held`; at the
// end the held text is parsed into content and calls (after the reasoning
// is split off: a call is looked for in the content only).
void CompletionJob::hold_tool_calls(size_t index, ChoiceOutput& c) {
  ToolCallStream& stream = tool_streams_[index];
  if (!c.finish) {
    c.text = stream.feed(c.text);
    return;
  }
  ParsedOutput parsed = stream.finish(c.text);
  c.text = std::move(parsed.content);
  c.tool_calls = std::move(parsed.calls);
}

// One chunk per token, as vLLM streams, even when several arrived in one
// drain: clients time each token by its chunk. The finish (and text held
// back until it) goes with the last.
void CompletionJob::write_token_chunks(int32_t index, const ChoiceOutput& c) {
  size_t offset = 0;
  for (size_t k = 0; k < c.token_ids.size(); ++k) {
    const bool last = k + 1 == c.token_ids.size();
    ChoiceOutput piece;
    piece.text = last ? c.text.substr(offset) : c.token_texts[k];
    piece.text_offset = c.text_offset + static_cast<int64_t>(offset);
    piece.token_ids = {c.token_ids[k]};
    piece.token_texts = {piece.text};
    offset += piece.text.size();
    if (last) piece.finish = c.finish;
    if (request_.reasoning) split_reasoning(static_cast<size_t>(index), piece);
    if (request_.want_logprobs) {
      piece.token_logprobs = {c.token_logprobs[k]};
      piece.top_logprobs = {c.top_logprobs[k]};
    }
    piece.num_tokens = c.num_tokens - static_cast<int64_t>(c.token_ids.size() - 1 - k);
    writer_->write_raw(sse_chunk(completion_chunk(meta_, index, piece, request_, tokenizer_)));
  }
}

void CompletionJob::write_stream_pieces() {
  for (size_t i = 0; i < choices_.size(); ++i) {
    ChoiceOutput& c = choices_[i];
    // One chunk per token, unless tool calls may hold text back (or the
    // stream is a response's, whose deltas carry text, not tokens).
    const bool per_token = !request_.tool_format && !response_events_ && c.token_ids.size() > 1;
    if (request_.reasoning && !per_token) split_reasoning(i, c);
    if (request_.tool_format) hold_tool_calls(i, c);
    if (c.text.empty() && c.token_ids.empty() && !c.finish) continue;
    if (response_events_) {
      // Text held back (a possible tool call) may leave no event, and no chunk.
      if (std::string chunk = http_chunk(response_events_->add(c)); !chunk.empty()) writer_->write_raw(std::move(chunk));
    } else {
      // A failed choice still streams what it decoded before the failure
      // (arrived in this drain), then the error.
      std::optional<FinishEvent> failed;
      if (c.finish && c.finish->reason == FinishReason::kError) failed = std::exchange(c.finish, std::nullopt);
      if (per_token) {
        write_token_chunks(static_cast<int32_t>(i), c);
      } else if (!failed || !c.text.empty() || !c.token_ids.empty()) {
        writer_->write_raw(sse_chunk(completion_chunk(meta_, static_cast<int32_t>(i), c, request_, tokenizer_)));
      }
      if (failed) {
        ApiError error{500, "generation failed: " + failed->stop_detail, "server_error", "", ""};
        writer_->write_raw(sse_chunk(error_body(error)));
      }
    }
    c.text_offset += static_cast<int64_t>(c.text.size());
    c.text.clear();
    c.token_ids.clear();
    c.token_logprobs.clear();
    c.token_texts.clear();
    c.top_logprobs.clear();
    c.tool_calls.clear();
    c.reasoning.clear();
    c.reasoning_tokens = 0;
    c.finish.reset();
  }
}

void CompletionJob::answer_whole() {
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (request_.reasoning) split_reasoning(i, choices_[i]);
    if (request_.tool_format) hold_tool_calls(i, choices_[i]);
  }
  for (const ChoiceOutput& c : choices_) {
    if (c.finish && c.finish->reason == FinishReason::kError) {
      ApiError error{500, "generation failed: " + c.finish->stop_detail, "server_error", "", ""};
      writer_->respond(500, "application/json", error_body(error));
      return;
    }
  }
  if (request_.responses) return answer_response();
  writer_->respond(200, "application/json", completion_body(meta_, request_, choices_, tokenizer_));
}

// POST /v1/responses, not streamed: one choice, as a response object.
void CompletionJob::answer_response() {
  store_response(choices_[0]);
  writer_->respond(200, "application/json", response_body(meta_, *request_.responses, choices_[0]));
}

// The finished response's conversation, for a later previous_response_id.
void CompletionJob::store_response(const ChoiceOutput& whole) {
  const ResponsesRequest& r = *request_.responses;
  if (r.store && whole.finish && whole.finish->reason != FinishReason::kError)
    context_.responses->put(meta_.id, stored_conversation(r, whole));
}

AccessUsage CompletionJob::usage() const {
  AccessUsage u{true, prompt_tokens_, completion_tokens_, -1};
  for (const ChoiceOutput& c : choices_)
    if (c.finish && c.num_tokens > 0 && (u.first_token_s < 0 || c.finish->timings.first_token_s < u.first_token_s))
      u.first_token_s = c.finish->timings.first_token_s;
  return u;
}

void CompletionJob::complete() {
  done_ = true;
  context_.registry->remove(this);
  writer_->set_on_close({});  // cuts the job <-> connection cycle
}

}  // namespace zl::server
