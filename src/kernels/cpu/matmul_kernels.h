// Internal to the matmul: the per-ISA tile kernels and the prepared input
// they share. A tile kernel computes y[t * ldy + r] for rows [row_begin,
// row_end) of w and tokens [0, num_tokens) of the input, reading each weight
// row from cache for every token tile (the caller sizes row ranges to fit L2).
#pragma once

#include <cstdint>

#include "kernels/cpu/matmul.h"

namespace zl::cpu {

// Tokens per tile of the AMX kernel: xq's rows are padded to a multiple of
// it, and xtiles groups the block scales by it.
constexpr int kTileTokens = 16;

struct MatmulInput {
  const float* x = nullptr;    // [num_tokens, cols] f32
  // [num_tokens, cols] int8 (quantized formats); rows up to the next
  // multiple of kTileTokens are readable (the AMX kernel loads whole tiles)
  const int8_t* xq = nullptr;
  const float* xd = nullptr;   // [num_tokens, cols / 32] block scales
  const float* xds = nullptr;  // [num_tokens, cols / 32] scale * sum(q) per block
  // [num_tokens, cols / 32] 128 * xds (AVX-512): the correction of the
  // formats whose codes carry 128, which the VNNI tiles broadcast from
  // memory (a multiply and a broadcast there took 2 of the ~14 vector-port
  // instructions per block and token of a one pass)
  const float* xds128 = nullptr;
  const int32_t* xsum16 = nullptr;  // [num_tokens, cols / 16] sum(q) per half block (Q6_K, Q2_K)
  // [ceil(num_tokens / kTileTokens), cols / 32, 3, kTileTokens]: per tile and block, the
  // tokens' xd, xds and 128 xds, so that the AMX kernel broadcasts a token's
  // from a fixed offset (AVX-512 with AMX-INT8; else null)
  const float* xtiles = nullptr;
  // [num_tokens, ceil(cols / 2)] bf16 pairs (packed bf16 weights on
  // AVX512-BF16); where bf16_amx_tiles(cols), tile-major instead:
  // [ceil(num_tokens / kTileTokens), cols / 32, kTileTokens, 16 pairs], each
  // AMX A tile 1 KiB contiguous, padding tokens readable
  const uint32_t* xbf16 = nullptr;
  int64_t num_tokens = 0;
  int64_t cols = 0;
};

using TileKernel = void (*)(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin,
                            int64_t row_end, float* y, int64_t ldy);

// The ISA's kernel for dtype (every ISA has every format).
TileKernel tile_kernel(Isa isa, DType dtype);
TileKernel tile_kernel_scalar(DType dtype);
TileKernel tile_kernel_avx2(DType dtype);
TileKernel tile_kernel_avx512(DType dtype);
TileKernel tile_kernel_avx512_quant(DType dtype);  // the quantized formats
// Packed f16 (matmul.h) on AVX-512, the tile kernel for f16 matrices that
// have a packed copy (matmul_avx512_f16.cpp).
void packed_f16_tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                     int64_t ldy);

// AMX-BF16 (amx_bf16_supported) kernel for packed bf16 matrices whose cols
// are a multiple of 32, given in.xbf16 (matmul_amx_bf16.cpp).
void packed_bf16_amx_tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                          float* y, int64_t ldy);

// The 64-byte operand of ldtilecfg (palette 1): rows and bytes per row of
// each of the 8 tiles.
struct AmxTileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
// Loads cfg into the tile unit (ldtilecfg), on a CPU with AMX.
void amx_load_config(const AmxTileConfig& cfg);
// All 8 tiles [16 rows, 64 bytes]: the bf16 kernel's shapes.
inline AmxTileConfig amx_square_tiles() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = kTileTokens;
    cfg.colsb[t] = 64;
  }
  return cfg;
}

// GCC's tile intrinsics are asm statements that name no memory: after tile
// stores into an object the compiler must be told that memory changed, or it
// may read the object before the stores, or fold its reads away as
// uninitialized (a local buffer is only ever written by tilestored).
inline void amx_stores_done() { asm volatile("" ::: "memory"); }

// Whether packed bf16 weights of this width go to the AMX-BF16 kernel.
inline bool bf16_amx_tiles(int64_t cols) { return cols % 32 == 0 && amx_bf16_supported(); }

// x: [n] f32 -> bf16 pairs (column 2c in the low half, a missing last column
// 0), rounded to nearest even, 16 pairs (32 columns) at a time: piece p at
// xp + p * piece_stride (16: one row of ceil(n / 2) pairs; another stride
// needs n a multiple of 32). Needs bf16_dot_supported().
void to_bf16_pairs_avx512(const float* x, int64_t n, uint32_t* xp, int64_t piece_stride = 16);

// The codes (as signed values), scale and min of block b (32 columns) of row
// r of a Q8_0, Q4_0, Q5_0, Q5_1, IQ4_NL or I8 matrix, read from its stored bytes: the
// block's values are scale * code + min (I8: scale 1; min 0 but for Q5_1,
// codes 0..31, which needs min non-null).
void weight_block(const WeightMatrix& w, int64_t r, int64_t b, int8_t* codes, float* scale, float* min = nullptr);
// Bytes of a stored block of 32 or super-block of 256 (I8: a row's 32 codes).
template <DType D>
constexpr int64_t kBlockBytes = D == DType::kI8 ? 32 : dtype_block_bytes(D);
// Groups of 16 rows per panel of packed f16 (see matmul.h).
constexpr int64_t kF16PanelGroups = 3;
// Packed code bytes per group of 16 rows and block (see matmul.h).
inline int64_t packed_code_bytes(DType d) {
  if (d == DType::kQ4_0 || d == DType::kQ4_K || d == DType::kIQ4_NL || d == DType::kIQ4_XS) return 4 * 64;
  if (d == DType::kQ6_K) return 6 * 64;
  if (d == DType::kQ3_K) return 3 * 64;
  if (d == DType::kQ2_K) return 2 * 64;
  return d == DType::kQ5_K || d == DType::kQ5_0 || d == DType::kQ5_1 ? 5 * 64 : 8 * 64;
}
// Packed scale bytes per group of 16 rows and 256-value super-block of a
// k-quant (see matmul.h).
inline int64_t packed_kscale_bytes(DType d) {
  return d == DType::kQ6_K || d == DType::kQ3_K ? 288 : d == DType::kIQ4_XS ? 160 : 320;
}

// Tokens per register tile of the AVX-512 kernels.
constexpr int kTokenTile = 4;

// Decode batches (a few token tiles) run every token tile on a group of
// rows before the next group, so that each weight comes from memory once;
// but then the stream would pause while the tiles after the first compute,
// and memory and compute would take turns (q8_0 dummy:llama-1b, 16 tokens a
// step: step time = weight read time + compute time). A ReadAhead spreads
// the next group's bytes over the current group's tiles instead, into L2,
// so that the two overlap: the kernels call step() with the bytes of the
// current group they have read, and it reads a line ahead per line_cost of
// them (64 x the token tiles run on each group). Reading past the matrix
// is harmless: prefetches do not fault.
struct ReadAhead {
  const uint8_t* at = nullptr;  // the next line to read ahead
  int64_t line_cost = 64;
  int64_t credit = 0;           // bytes read since the last line, < line_cost
  // From `at` on, over the tiles of tile_tokens tokens that num_tokens make.
  static ReadAhead over_tiles(const uint8_t* at, int64_t num_tokens, int tile_tokens = kTokenTile) {
    return ReadAhead{at, 64 * ((num_tokens + tile_tokens - 1) / tile_tokens)};
  }
  void step(int64_t bytes_read) {
    for (credit += bytes_read; credit >= line_cost; credit -= line_cost, at += 64) __builtin_prefetch(at, 0, 2);
  }
};
// f.template operator()<T>(t0) for the tiles of T = kTokenTile tokens, then the rest.
template <class F>
inline void each_token_tile(int64_t num_tokens, F&& f) {
  int64_t t = 0;
  for (; t + kTokenTile <= num_tokens; t += kTokenTile) f.template operator()<kTokenTile>(t);
  switch (num_tokens - t) {
    case 3: return f.template operator()<3>(t);
    case 2: return f.template operator()<2>(t);
    case 1: return f.template operator()<1>(t);
    default: return;
  }
}

// The most tokens a call runs group by group with a ReadAhead; past it
// (prefill) the kernels run each token tile over a row block (matmul.cpp
// rows_per_block), as compute, not the weight stream, sets the pace.
constexpr int64_t kGroupFirstMaxTokens = 64;
// A decode batch, which runs group by group: up to kGroupFirstMaxTokens.
inline bool group_first(int64_t num_tokens) { return num_tokens <= kGroupFirstMaxTokens; }

// Whether a decode batch's strips (17-64 tokens a call; 8-64 of a stored
// matrix) write their outputs with non-temporal stores, a whole 64-byte
// line each (so y's token rows must start on lines): a strip writes its 32
// rows of every token, one line per token and group, and a decode step's
// outputs are never in cache when written (the weights streamed since
// evicted them), so each plain store first read its line from memory, 11%
// more traffic than the weights at 32 tokens of Q4_0, and its misses
// stalled the stores behind them. Not the one pass (1-16 tokens): there it
// did not measure faster. Needs an sfence before another thread reads y.
// y: the outputs of the first row a tile stores, groups of 16 rows from it.
inline bool streams_outputs(const float* y, int64_t ldy) {
  return reinterpret_cast<uintptr_t>(y) % 64 == 0 && ldy % kPackRows == 0;
}

// Lanes of the packed group of rows [rg, rg + 16) that a tile of rows
// [row_lo, row_end) stores (a __mmask16): groups cut by the tile's edges are
// computed whole and stored in part.
inline uint16_t group_store_mask(int64_t rg, int64_t row_lo, int64_t row_end) {
  const int64_t lo = row_lo > rg ? row_lo - rg : 0, hi = row_end - rg < kPackRows ? row_end - rg : kPackRows;
  return static_cast<uint16_t>(((1u << hi) - 1) & ~((1u << lo) - 1));
}

constexpr bool dtype_is_q5(DType d) { return d == DType::kQ5_0 || d == DType::kQ5_1; }
// Formats multiplied with int8 activations (MatmulInput::xq).
constexpr bool dtype_is_quantized(DType d) {
  return d == DType::kQ8_0 || d == DType::kQ4_0 || d == DType::kI8 || d == DType::kIQ4_NL ||
         dtype_has_super_blocks(d) || dtype_is_q5(d);
}
// Formats whose kernels read MatmulInput::xsum16 (an offset per half block).
constexpr bool dtype_needs_half_sums(DType d) {
  return d == DType::kQ6_K || d == DType::kQ3_K || d == DType::kQ2_K;
}

}  // namespace zl::cpu
