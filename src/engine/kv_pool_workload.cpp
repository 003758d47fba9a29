#include "engine/kv_pool_workload.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <random>
#include <vector>

#include "core/check.h"

namespace zl {
namespace {

struct Request {
  int32_t num_prompt = 0;
  int32_t max_total = 0;
  int32_t num_output = 0;       // tokens it generates before it stops
  int32_t shared_prefix = -1;   // index of its system prompt, or -1
  std::vector<int32_t> tokens;  // prompt + output, made at first admission
  SeqBlocks blocks;
  bool finished = false;
};

class WorkloadRun {
 public:
  explicit WorkloadRun(const KvWorkloadConfig& config)
      : config_(config),
        rng_(config.seed),
        pool_(KvPoolConfig{config.num_blocks, config.block_size, config.policy}),
        salt_(make_cache_salt(config.seed, "")) {}

  KvWorkloadResult run();

 private:
  int32_t uniform(int32_t lo, int32_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int32_t>(lo, hi)(rng_);
  }
  void make_requests();
  void fill_tokens(Request& r);
  void admit_waiting();
  void compute(size_t running_index);
  void preempt_newest();
  void compact(int32_t target_blocks);
  void record_stats();

  KvWorkloadConfig config_;
  std::mt19937_64 rng_;
  KvPool pool_;
  BlockSignature salt_;
  std::vector<std::vector<int32_t>> prefixes_;
  std::vector<Request> requests_;
  std::deque<int32_t> waiting_;
  std::vector<int32_t> running_;  // in admission order: the newest last
  KvWorkloadResult result_;
  double running_sum_ = 0.0;
  double used_sum_ = 0.0;
};

void WorkloadRun::make_requests() {
  for (int32_t i = 0; i < config_.num_shared_prefixes; ++i) {
    std::vector<int32_t> prefix(static_cast<size_t>(config_.shared_prefix_len));
    for (int32_t& t : prefix) t = uniform(0, 31999);
    prefixes_.push_back(std::move(prefix));
  }
  std::bernoulli_distribution shared(config_.shared_prefix_share);
  requests_.resize(static_cast<size_t>(config_.num_requests));
  for (Request& r : requests_) {
    r.num_prompt = uniform(config_.min_len, config_.max_len);
    int32_t max_new = uniform(config_.min_len, config_.max_len);
    r.max_total = r.num_prompt + max_new;
    r.num_output = uniform(1, max_new);
    if (!prefixes_.empty() && shared(rng_)) r.shared_prefix = uniform(0, config_.num_shared_prefixes - 1);
  }
  for (int32_t i = 0; i < config_.num_requests; ++i) waiting_.push_back(i);
}

void WorkloadRun::fill_tokens(Request& r) {
  if (!r.tokens.empty()) return;  // preempted before: same tokens again
  r.tokens.reserve(static_cast<size_t>(r.num_prompt + r.num_output));
  if (r.shared_prefix >= 0) {
    const auto& prefix = prefixes_[r.shared_prefix];
    r.tokens.assign(prefix.begin(),
                    prefix.begin() + std::min<int32_t>(r.num_prompt, config_.shared_prefix_len));
  }
  while (static_cast<int32_t>(r.tokens.size()) < r.num_prompt + r.num_output) {
    r.tokens.push_back(uniform(0, 31999));
  }
}

void WorkloadRun::admit_waiting() {
  while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < config_.max_running) {
    Request& r = requests_[waiting_.front()];
    fill_tokens(r);
    AdmitOutcome outcome = pool_.admit(std::span(r.tokens).first(r.num_prompt), r.max_total,
                                       salt_, &r.blocks);
    if (outcome == AdmitOutcome::kWait && config_.compaction && pool_.compaction_may_help(r.max_total)) {
      compact((r.max_total + config_.block_size - 1) / config_.block_size);
      outcome = pool_.admit(std::span(r.tokens).first(r.num_prompt), r.max_total, salt_, &r.blocks);
    }
    CHECK(outcome != AdmitOutcome::kNeverFits)
        << "workload request of " << r.max_total << " tokens cannot fit the pool";
    if (outcome == AdmitOutcome::kWait) return;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
  }
}

void WorkloadRun::compact(int32_t target_blocks) {
  std::vector<SeqBlocks*> live;
  for (int32_t id : running_) live.push_back(&requests_[id].blocks);
  std::vector<BlockMove> moves;
  pool_.compact(live, target_blocks, &moves);
}

void WorkloadRun::preempt_newest() {
  Request& r = requests_[running_.back()];
  pool_.release(r.blocks);
  waiting_.push_front(running_.back());
  running_.pop_back();
  ++result_.num_preemptions;
}

// Prefill chunk or one decode token for running_[running_index]; paged
// sequences that cannot grow preempt the newest sequence, possibly themselves.
void WorkloadRun::compute(size_t running_index) {
  const int32_t id = running_[running_index];
  Request& r = requests_[id];
  const int32_t done = r.blocks.num_computed_tokens;
  int32_t n = done < r.num_prompt ? std::min(config_.prefill_chunk, r.num_prompt - done) : 1;
  int32_t target = done + n;
  while (!pool_.ensure_capacity(r.blocks, target)) {
    CHECK(running_.size() > 1) << "a sequence alone in the pool could not grow to " << target;
    bool self = running_.back() == id;
    preempt_newest();
    if (self) return;
  }
  pool_.commit(r.blocks, r.tokens, target);
  r.finished = target == r.num_prompt + r.num_output;
}

void WorkloadRun::record_stats() {
  KvPoolStats s = pool_.stats();
  CHECK(s.num_used_blocks <= s.num_blocks && s.num_used_blocks >= 0) << "pool reports "
                                                                     << s.num_used_blocks;
  result_.internal_fragmentation_mean += s.internal_fragmentation;
  result_.external_fragmentation_mean += s.external_fragmentation;
  result_.free_space_scatter_mean += s.free_space_scatter;
  result_.reserved_ahead_mean += s.reserved_ahead;
  result_.internal_fragmentation_max =
      std::max(result_.internal_fragmentation_max, s.internal_fragmentation);
  result_.external_fragmentation_max =
      std::max(result_.external_fragmentation_max, s.external_fragmentation);
  result_.reserved_ahead_max = std::max(result_.reserved_ahead_max, s.reserved_ahead);
  used_sum_ += static_cast<double>(s.num_used_blocks) / s.num_blocks;
  running_sum_ += static_cast<double>(running_.size());
  ++result_.num_steps;
}

KvWorkloadResult WorkloadRun::run() {
  CHECK(config_.min_len >= 1 && config_.min_len <= config_.max_len)
      << "lengths " << config_.min_len << ".." << config_.max_len;
  CHECK(pool_.can_ever_fit(2 * config_.max_len)) << "the longest request cannot fit the pool";
  make_requests();
  while (!waiting_.empty() || !running_.empty()) {
    admit_waiting();
    CHECK(!running_.empty()) << "nothing running and the first waiting request does not fit";
    for (size_t i = 0; i < running_.size(); ++i) compute(i);
    record_stats();
    auto finished = [&](int32_t id) {
      Request& r = requests_[id];
      if (!r.finished) return false;
      pool_.release(r.blocks);
      r.tokens = {};
      return true;
    };
    running_.erase(std::remove_if(running_.begin(), running_.end(), finished), running_.end());
  }
  auto steps = static_cast<double>(std::max<int64_t>(result_.num_steps, 1));
  result_.policy = config_.policy;
  result_.num_requests = config_.num_requests;
  result_.internal_fragmentation_mean /= steps;
  result_.external_fragmentation_mean /= steps;
  result_.free_space_scatter_mean /= steps;
  result_.reserved_ahead_mean /= steps;
  result_.used_blocks_mean = used_sum_ / steps;
  result_.mean_running = running_sum_ / steps;
  KvPoolStats s = pool_.stats();
  CHECK_EQ(s.num_used_blocks, 0);
  result_.prefix_hit_rate =
      s.prefix_query_tokens == 0
          ? 0.0
          : static_cast<double>(s.prefix_hit_tokens) / static_cast<double>(s.prefix_query_tokens);
  result_.num_compactions = s.num_compactions;
  result_.num_block_moves = s.num_block_moves;
  return result_;
}

}  // namespace

KvWorkloadResult run_kv_workload(const KvWorkloadConfig& config) {
  return WorkloadRun(config).run();
}

std::string kv_workload_json(const KvWorkloadResult& r) {
  char buf[768];
  std::snprintf(buf, sizeof(buf),
                "{\"policy\":\"%s\",\"requests\":%d,\"steps\":%lld,\"preemptions\":%lld,"
                "\"internal_fragmentation_pct\":%.3f,\"internal_fragmentation_max_pct\":%.3f,"
                "\"external_fragmentation_pct\":%.3f,\"external_fragmentation_max_pct\":%.3f,"
                "\"free_space_scatter_pct\":%.3f,"
                "\"reserved_ahead_pct\":%.3f,\"reserved_ahead_max_pct\":%.3f,"
                "\"used_blocks_pct\":%.3f,\"mean_running\":%.2f,\"prefix_hit_rate\":%.4f,"
                "\"compactions\":%lld,\"block_moves\":%lld}",
                cache_policy_name(r.policy), r.num_requests, static_cast<long long>(r.num_steps),
                static_cast<long long>(r.num_preemptions), 100 * r.internal_fragmentation_mean,
                100 * r.internal_fragmentation_max, 100 * r.external_fragmentation_mean,
                100 * r.external_fragmentation_max, 100 * r.free_space_scatter_mean, 100 * r.reserved_ahead_mean,
                100 * r.reserved_ahead_max, 100 * r.used_blocks_mean, r.mean_running,
                r.prefix_hit_rate, static_cast<long long>(r.num_compactions),
                static_cast<long long>(r.num_block_moves));
  return buf;
}

}  // namespace zl
