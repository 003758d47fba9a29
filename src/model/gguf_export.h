// (Named gguf_export, not gguf_writer: tests/model/gguf_writer.h is the test-only byte builder.)
// Writes a Llama-family model as a GGUF v3 file that llama.cpp loads: the
// llama.* shape keys, a "llama" (SentencePiece-style) vocabulary, and every
// weight matrix in its in-memory format (F32, F16, BF16, Q8_0, Q4_0; int8
// with row scales has no GGUF type and is refused). Norm weights are F32.
//
// Q and K rows are written in llama.cpp's interleaved-rope order: our HF-order
// weights (rotate_half pairs (i, i + head_dim/2)) are permuted exactly as
// convert_hf_to_gguf.py's permute() does, so reading the file back (which
// sets rope_interleaved) gives the same logits. Llama 3 rope scaling is not
// written (llama.cpp would need rope_freqs.weight, which our reader lacks):
// such a model's file is exact only for positions where scaling has no effect
// on the frequencies; it runs at the same speed, which is what it is for.
#pragma once

#include <string>

#include "model/config.h"
#include "model/weights.h"
#include "zerolayer/status.h"

namespace zl {

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // 1 normal, 2 unknown, 3 control, 6 byte
  int32_t bos_id = -1, eos_id = -1;
};

// The built-in byte tokenizer's vocabulary as llama.cpp spells it: <0xNN>
// byte tokens, <s> and </s>, and "<tN>" normal tokens.
GgufVocab byte_tokenizer_gguf_vocab(int32_t vocab_size);

Status write_gguf(const std::string& path, const ModelConfig& config, const ModelWeights& weights,
                  const GgufVocab& vocab, const std::string& name);

}  // namespace zl
