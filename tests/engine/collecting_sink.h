// An EventSink for tests: collects one request's tokens, text and finish
// event, counts terminal events, and lets the test thread wait for the end.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "zerolayer/engine.h"

namespace zl::test {

class CollectingSink : public EventSink {
 public:
  void on_token(const TokenEvent& event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens.push_back(event.token);
    text += event.text;
    logprobs.push_back(event.logprob);
    top_logprobs.push_back(event.top_logprobs);
  }
  void on_finish(const FinishEvent& event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    text += event.remaining_text;
    finish = event;
    num_finish_events++;
    done_.notify_all();
  }
  // Waits for the terminal event; false on timeout.
  bool wait(double seconds = 60.0) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return num_finish_events > 0; });
  }

  // Tokens received so far, safe while events still arrive.
  size_t tokens_so_far() {
    std::lock_guard<std::mutex> lock(mutex_);
    return tokens.size();
  }

  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<TokenLogprob>> top_logprobs;
  std::string text;
  FinishEvent finish;
  int num_finish_events = 0;

 private:
  std::mutex mutex_;
  std::condition_variable done_;
};

}  // namespace zl::test
