// Host-side planning of the CUDA forward pass (runs on any machine).
#include "model/cuda_plan.h"

#include <gtest/gtest.h>

#include <cstring>

#include "kernels/cuda/sampling.h"

namespace zl {
namespace {

TEST(DecodeGraphBuckets, PowersOfTwoUpToTheBatchLimit) {
  EXPECT_EQ(decode_graph_buckets(1), (std::vector<int32_t>{1}));
  EXPECT_EQ(decode_graph_buckets(5), (std::vector<int32_t>{1, 2, 4, 8}));
  EXPECT_EQ(decode_graph_buckets(256).back(), 256);
  EXPECT_EQ(decode_graph_buckets(256).size(), 9u);
  EXPECT_EQ(decode_graph_buckets(10000).back(), kMaxDecodeGraphBatch);
  EXPECT_EQ(decode_graph_bucket(1, 256), 1);
  EXPECT_EQ(decode_graph_bucket(3, 256), 4);
  EXPECT_EQ(decode_graph_bucket(64, 256), 64);
  EXPECT_EQ(decode_graph_bucket(65, 256), 128);
  EXPECT_EQ(decode_graph_bucket(256, 256), 256);
  EXPECT_EQ(decode_graph_bucket(257, 1000), -1);
  EXPECT_EQ(decode_graph_bucket(0, 256), -1);
  EXPECT_EQ(decode_graph_bucket(6, 5), 8);  // the bucket covering max_num_seqs
}

TEST(DecodeNumSplits, FillsTheMultiprocessorsAndStaysInRange) {
  // batch 1, 8 kv heads, group 4 (one tile): 8 blocks for 132 SMs -> 33 wanted, capped at 16.
  EXPECT_EQ(decode_num_splits(1, 8, 4, 4, 132), 16);
  // batch 8: 64 blocks -> ceil(264 / 64) = 5.
  EXPECT_EQ(decode_num_splits(8, 8, 4, 4, 132), 5);
  // batch 64 and up already fill the chip.
  EXPECT_EQ(decode_num_splits(64, 8, 4, 4, 132), 1);
  EXPECT_EQ(decode_num_splits(256, 8, 4, 4, 132), 1);
  // group 8 with 4 rows per block takes two tiles per kv head.
  EXPECT_EQ(decode_num_splits(4, 4, 8, 4, 132), 9);
}

TEST(StepLayout, SectionsAreAlignedAndDisjoint) {
  StepLayout l = step_layout(5, 3, 2);
  const int32_t offsets[] = {l.tokens, l.positions, l.slots, l.seq_token_begin, l.seq_num_tokens,
                             l.seq_start_pos, l.table_begin, l.logit_rows, l.sample_params, l.block_tables};
  const int32_t sizes[] = {5, 5, 5, 3, 3, 3, 3, 2, 2 * sample_params_words(), 0};
  for (size_t i = 0; i < std::size(offsets); ++i) {
    EXPECT_EQ(offsets[i] % 4, 0) << i;
    if (i + 1 < std::size(offsets)) {
      EXPECT_GE(offsets[i + 1], offsets[i] + sizes[i]) << i;
    }
  }
  EXPECT_EQ(sample_params_words() * 4, static_cast<int32_t>(sizeof(cuda::SampleParams)));
}

TEST(PackStep, WritesPositionsSlotsTablesAndPadding) {
  // Chunk 0: 3 prompt tokens from position 0 (blocks 7, 2); chunk 1: one decode at position 5 (blocks 4, 9).
  const int32_t tokens[] = {11, 12, 13, 14};
  const int32_t table0[] = {7, 2};
  const int32_t table1[] = {4, 9};
  const SeqChunk seqs[] = {{0, 3, 0, table0}, {3, 1, 5, table1}};
  const int32_t rows[] = {2, 3};
  ForwardBatch batch{tokens, seqs, rows};
  StepLayout l = step_layout(8, 4, 4);  // padded to a bucket of 8 tokens, 4 chunks, 4 rows
  cuda::SampleParams params[2];
  params[0].slot = 3;
  params[0].temperature = 0.5f;
  params[1].slot = 1;
  std::vector<int32_t> out;
  int64_t used = pack_step(batch, 4, l, {reinterpret_cast<const uint8_t*>(params), sizeof(params)}, out);
  ASSERT_EQ(used, l.block_tables + 4);
  ASSERT_EQ(static_cast<int64_t>(out.size()), used);
  const int32_t* w = out.data();
  EXPECT_EQ(std::vector<int32_t>(w + l.tokens, w + l.tokens + 5), (std::vector<int32_t>{11, 12, 13, 14, 0}));
  EXPECT_EQ(std::vector<int32_t>(w + l.positions, w + l.positions + 4), (std::vector<int32_t>{0, 1, 2, 5}));
  // slot = table[pos / 4] * 4 + pos % 4; padding tokens store nothing.
  EXPECT_EQ(std::vector<int32_t>(w + l.slots, w + l.slots + 6), (std::vector<int32_t>{28, 29, 30, 37, -1, -1}));
  EXPECT_EQ(std::vector<int32_t>(w + l.seq_num_tokens, w + l.seq_num_tokens + 4), (std::vector<int32_t>{3, 1, 0, 0}));
  EXPECT_EQ(std::vector<int32_t>(w + l.seq_token_begin, w + l.seq_token_begin + 4), (std::vector<int32_t>{0, 3, 4, 4}));
  EXPECT_EQ(std::vector<int32_t>(w + l.seq_start_pos, w + l.seq_start_pos + 2), (std::vector<int32_t>{0, 5}));
  EXPECT_EQ(std::vector<int32_t>(w + l.table_begin, w + l.table_begin + 2), (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(std::vector<int32_t>(w + l.block_tables, w + l.block_tables + 4), (std::vector<int32_t>{7, 2, 4, 9}));
  EXPECT_EQ(std::vector<int32_t>(w + l.logit_rows, w + l.logit_rows + 2), (std::vector<int32_t>{2, 3}));
  cuda::SampleParams back[4];
  std::memcpy(static_cast<void*>(back), w + l.sample_params, sizeof(back));
  EXPECT_EQ(back[0].slot, 3);
  EXPECT_EQ(back[0].temperature, 0.5f);
  EXPECT_EQ(back[1].slot, 1);
  EXPECT_EQ(back[2].slot, -1);
  EXPECT_EQ(back[3].slot, -1);
}

TEST(IsPlainDecode, OnlyOneTokenChunksWithTheirOwnRows) {
  const int32_t tokens[] = {1, 2};
  const int32_t table[] = {0};
  const SeqChunk decodes[] = {{0, 1, 3, table}, {1, 1, 0, table}};
  const int32_t rows[] = {0, 1};
  EXPECT_TRUE(is_plain_decode({tokens, decodes, rows}));
  const int32_t swapped[] = {1, 0};
  EXPECT_FALSE(is_plain_decode({tokens, decodes, swapped}));
  const SeqChunk prefill[] = {{0, 2, 0, table}};
  const int32_t last[] = {1};
  EXPECT_FALSE(is_plain_decode({tokens, prefill, last}));
}

}  // namespace
}  // namespace zl
