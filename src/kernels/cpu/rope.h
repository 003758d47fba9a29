// Rotary position embedding applied in place to the heads of one token.
// inv_freq[i] (i < head_dim/2) is the rotation speed of pair i, already
// adjusted for any rope scaling; the angle is pos * inv_freq[i] in f32, as
// transformers computes it.
#pragma once

#include <cstdint>

namespace zl::cpu {

// x: [num_heads, head_dim]. Only the first rotary_dim values of each head
// rotate (0: all of them; Phi-3's partial rotary), with inv_freq:
// [rotary_dim / 2]. interleaved: pairs (2i, 2i+1) (llama.cpp "norm",
// llama2.c); otherwise pairs (i, i + rotary_dim/2) (transformers
// rotate_half). mscale multiplies cos and sin (LongRoPE's attention factor).
void rope_f32(float* x, int32_t num_heads, int32_t head_dim, int32_t pos, const float* inv_freq,
              bool interleaved, int32_t rotary_dim = 0, float mscale = 1.0f);

}  // namespace zl::cpu
