// One forward pass as the scheduler plans it: the batch (tokens and one
// chunk per sequence), the rows whose logits give a next token, and the
// buffers the pass fills (next tokens, sampled logprobs). The scheduler
// writes it, the executor runs it, the postprocess stage reads it after the
// pass and may leave its decode rows in place for the next step (kept rows).
// Capacities are fixed at construction; building a plan never allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/forward_runner.h"
#include "engine/kv_pool.h"
#include "engine/sequence.h"
#include "model/llama.h"

namespace zl {

// s.seq computes its next s.num_tokens tokens in the pass.
struct Scheduled {
  Sequence* seq;
  int32_t num_tokens;
};

struct StepPlan {
  StepPlan(int32_t max_num_batched_tokens, int32_t max_num_seqs, int32_t num_blocks) {
    const size_t max_seqs = static_cast<size_t>(max_num_seqs);
    block_moves.reserve(static_cast<size_t>(num_blocks));
    tokens.reserve(static_cast<size_t>(max_num_batched_tokens));
    chunks.reserve(max_seqs);
    rows.reserve(max_seqs);
    row_seqs.reserve(max_seqs);
    scheduled.reserve(max_seqs);
    next_tokens.resize(max_seqs);
    sampled.reserve(max_seqs);
    samples.resize(max_seqs);
    top.resize(max_seqs * kMaxTopLogprobs);
    feeds.reserve(max_seqs);
  }

  // Empties the batch for a plan built anew (capacities stay).
  void clear() {
    tokens.clear();
    chunks.clear();
    rows.clear();
    row_seqs.clear();
    scheduled.clear();
    sampled.clear();
    feeds.clear();
  }

  std::vector<int32_t> tokens;         // [max_num_batched_tokens]
  std::vector<SeqChunk> chunks;        // [max_num_seqs]
  std::vector<int32_t> rows;           // [max_num_seqs] token indices whose logits give a next token
  std::vector<Sequence*> row_seqs;     // [max_num_seqs] the sequence of each row
  std::vector<Scheduled> scheduled;    // [max_num_seqs]
  std::vector<int32_t> next_tokens;    // [max_num_seqs] each logits row's next token
  std::vector<SampledRow> sampled;     // [max_num_seqs] rows whose sequence samples
  std::vector<RowSample> samples;      // [max_num_seqs] their logprobs...
  std::vector<TokenLogprob> top;       // [max_num_seqs, kMaxTopLogprobs] ...and top logprobs
  std::vector<FeedRow> feeds;          // [max_num_seqs] tokens the runner copies in
  // [num_blocks] a compaction slice's KV copies, run in order before the
  // forward call (after the pass before has written its KV). Not part of
  // the batch: clear() leaves them, the scheduler empties them each step.
  std::vector<BlockMove> block_moves;
  // Rows [0, num_decode_rows) are decodes: scheduled[row] is row_seqs[row]'s
  // one token; prefill chunks follow them.
  size_t num_decode_rows = 0;
  bool reused = false;                 // the decode rows are kept ones
  bool all_decoders_scheduled = true;  // the scheduler left no decoding sequence out
  uint64_t id = 0;                     // its pass's number (Executor::launch())
  Clock::time_point launched_at;       // overlap: when it was queued on the runner
  ForwardJob job;                      // what the pass reads and fills
};

}  // namespace zl
