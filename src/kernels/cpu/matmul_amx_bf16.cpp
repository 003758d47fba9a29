// AMX kernel for packed bf16 weights (AMX-BF16, Sapphire Rapids on).
//
// The packed layout (matmul.h) is already the B operand of tdpbf16ps: group
// g's column pair c is 16 rows x 2 bf16 in 64 bytes, so 16 consecutive pairs
// are one [16 pairs, 16 rows x 2] tile, 1 KiB contiguous. The activations
// are rounded to bf16 pairs once per call and laid out tile-major
// (MatmulInput::xbf16), so each A tile, [16 tokens, 16 pairs], is 1 KiB
// contiguous too (rows a token apart, 4 KiB at 2048 columns, fell in one L1
// set; tile-major: 32 tokens 301-302 -> 311-315 tokens/s). The product is
// [16 tokens, 16 rows] of f32 sums, one tile per token tile and group.
//
// Tiles: C0..C3 the sums of token tiles i = 0, 1 x groups j = 0, 1 (C 2i + j),
// A4 / A5 the two token tiles, B6 / B7 the two groups' weights; per 32
// columns four tdpbf16ps from four tile loads.
//
// Each output is a chain of tdpbf16ps over the 32-column chunks in order from
// zero, and a tile row (token) never mixes with another, so a token's result
// does not depend on the batch, its place in a tile or the thread: every
// batch size, decode included, runs here when this kernel is chosen (cols a
// multiple of 32), and the bits are batch-invariant. The sums differ from
// vdpbf16ps' (another order) by f32 rounding only.
#include "kernels/cpu/immintrin_quiet.h"

#include <algorithm>

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AMX_BF16 __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq")))

namespace zl::cpu {
namespace {

constexpr int64_t kChunkPairs = 16;  // column pairs per tile product (32 columns)
// The tile loads of the weights do not train the hardware prefetchers, so
// the kernel reads ahead itself. Where a row block's weights are read by
// more than one pass of token tiles (tokens > 32), into L2 8 chunks (8 KiB a
// group) ahead: 64 tokens 380 -> 415-420 tokens/s. Where one pass reads
// them, the chunk about to be loaded into L1 (presumably the prefetches
// put its 16 line fills in flight at once): 32 tokens 301-306 -> 321-325,
// and 1-16 +2-5%; reading ahead into L2 there cost ~5% at 8-16 tokens
// (dummy:llama-1b, the Xeon VM). Reading past the matrix is harmless:
// prefetches do not fault.
constexpr int64_t kAheadPairs = 8 * kChunkPairs;

template <decltype(_MM_HINT_T0) Hint>  // GCC: enum _mm_hint; clang: int
ZL_AMX_BF16 inline void prefetch_chunk(const uint8_t* w) {
  for (int64_t line = 0; line < kChunkPairs; ++line) _mm_prefetch(reinterpret_cast<const char*>(w + line * 64), Hint);
}

// y rows [rg, rg + 16) within [row_lo, row_end) of tokens t0 .. t0 + count - 1
// from a stored C tile sums[16 tokens][16 rows].
ZL_AMX_BF16 inline void store_sums(const float (&sums)[kTileTokens][kPackRows], int64_t rg, int64_t row_lo,
                                   int64_t row_end, int64_t t0, int64_t count, float* y, int64_t ldy) {
  const __mmask16 m = group_store_mask(rg, row_lo, row_end);
  for (int64_t t = 0; t < count; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy + rg, m, _mm512_loadu_ps(sums[t]));
}

// NT token tiles (1-2) from token t0 x NG groups (1-2) from group g over all
// columns; tokens past the batch are computed (padded rows of xbf16) and
// dropped, rows outside [row_lo, row_end) likewise.
template <int NT, int NG>
ZL_AMX_BF16 void tiles(const WeightMatrix& w, const MatmulInput& in, int64_t g, int64_t row_lo, int64_t row_end,
                       int64_t t0, float* y, int64_t ldy) {
  // Tile-major activations (MatmulInput::xbf16): the A tile of token tile
  // t0 / 16 and pairs [c, c + 16) is 1 KiB at x0 + 16 c.
  const int64_t pairs = in.cols / 2;
  const bool ahead = in.num_tokens > 2 * kTileTokens;
  const uint32_t* x0 = in.xbf16 + t0 * pairs;
  const uint32_t* x1 = x0 + kTileTokens * pairs;
  const uint8_t* w0 = w.packed + g * pairs * 64;
  const uint8_t* w1 = w0 + pairs * 64;
  _tile_zero(0);
  if constexpr (NG > 1) _tile_zero(1);
  if constexpr (NT > 1) _tile_zero(2);
  if constexpr (NT > 1 && NG > 1) _tile_zero(3);
  for (int64_t c = 0; c < pairs; c += kChunkPairs) {
    if (ahead) {
      prefetch_chunk<_MM_HINT_T1>(w0 + (c + kAheadPairs) * 64);
      if constexpr (NG > 1) prefetch_chunk<_MM_HINT_T1>(w1 + (c + kAheadPairs) * 64);
    } else {
      prefetch_chunk<_MM_HINT_T0>(w0 + c * 64);
      if constexpr (NG > 1) prefetch_chunk<_MM_HINT_T0>(w1 + c * 64);
    }
    _tile_loadd(4, x0 + c * kTileTokens, 64);
    _tile_loadd(6, w0 + c * 64, 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NG > 1) {
      _tile_loadd(7, w1 + c * 64, 64);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (NT > 1) {
      _tile_loadd(5, x1 + c * kTileTokens, 64);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (NG > 1) _tile_dpbf16ps(3, 5, 7);
    }
  }
  alignas(64) float sums[kTileTokens][kPackRows];
  const int64_t rg = g * kPackRows;
  // Tokens of the batch in each tile (the last may be a part tile).
  const int64_t first = std::min<int64_t>(kTileTokens, in.num_tokens - t0);
  const int64_t second = std::min<int64_t>(kTileTokens, in.num_tokens - t0 - kTileTokens);
  _tile_stored(0, sums, 64);
  amx_stores_done();
  store_sums(sums, rg, row_lo, row_end, t0, first, y, ldy);
  if constexpr (NG > 1) {
    _tile_stored(1, sums, 64);
    amx_stores_done();
    store_sums(sums, rg + kPackRows, row_lo, row_end, t0, first, y, ldy);
  }
  if constexpr (NT > 1) {
    _tile_stored(2, sums, 64);
    amx_stores_done();
    store_sums(sums, rg, row_lo, row_end, t0 + kTileTokens, second, y, ldy);
    if constexpr (NG > 1) {
      _tile_stored(3, sums, 64);
      amx_stores_done();
      store_sums(sums, rg + kPackRows, row_lo, row_end, t0 + kTileTokens, second, y, ldy);
    }
  }
}

// Every group of rows [row_begin, row_end) for token tiles from t0 (NT of them).
template <int NT>
ZL_AMX_BF16 void row_groups(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                            int64_t t0, float* y, int64_t ldy) {
  const int64_t g_end = (row_end + kPackRows - 1) / kPackRows;
  int64_t g = row_begin / kPackRows;
  for (; g + 2 <= g_end; g += 2) tiles<NT, 2>(w, in, g, row_begin, row_end, t0, y, ldy);
  if (g < g_end) tiles<NT, 1>(w, in, g, row_begin, row_end, t0, y, ldy);
}

}  // namespace

ZL_AMX_BF16 void packed_bf16_amx_tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin,
                                      int64_t row_end, float* y, int64_t ldy) {
  amx_load_config(amx_square_tiles());
  int64_t t = 0;
  for (; t + kTileTokens < in.num_tokens; t += 2 * kTileTokens) row_groups<2>(w, in, row_begin, row_end, t, y, ldy);
  if (t < in.num_tokens) row_groups<1>(w, in, row_begin, row_end, t, y, ldy);
  _tile_release();
}

}  // namespace zl::cpu
