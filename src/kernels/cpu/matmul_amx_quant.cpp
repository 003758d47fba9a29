// AMX-INT8 tiles (Sapphire Rapids on) for the packed quantized formats whose
// blocks end in block_step: one tdpbsud gives 16 tokens' integer dots with
// one block of 16 rows, the dots vpdpbusd gives (quant_rows_avx512.h), and
// the float steps are the VNNI tiles' own.
#include "kernels/cpu/quant_rows_avx512.h"

namespace zl::cpu::quant_avx512 {
namespace {

// Tiles of the AMX kernel: dots C0..C3 ([16 tokens, 16 rows] int32), two
// activation tiles A ([16 tokens, 32 codes]) and two weight tiles B ([8
// quads, 16 rows x 4 codes], the VNNI layout of v[k]), used in turn. A
// batch's last tokens, fewer than 16, run as a whole tile too: the rows of
// xq past the batch are readable (MatmulInput), their dots unused.
constexpr int kAmxChunk = 4;  // blocks per round of tile products

ZL_AMX inline void amx_configure() {
  AmxTileConfig cfg;
  for (int c = 0; c < kAmxChunk; ++c) {
    cfg.rows[c] = kAmxTokens;
    cfg.colsb[c] = 64;
  }
  for (int a : {4, 5}) {
    cfg.rows[a] = kAmxTokens;
    cfg.colsb[a] = 32;
  }
  for (int b : {6, 7}) {
    cfg.rows[b] = 8;
    cfg.colsb[b] = 64;
  }
  amx_load_config(cfg);
}

// dots[16][16] = the 16 tokens' codes at x (row stride) times one block's
// weights (8 x 64 bytes) in tile C, through tiles A and B. A macro: GCC's
// tile intrinsics paste their tile numbers into the asm text as written.
#define ZL_AMX_BLOCK_DOT(C, A, B, x, stride, weights) \
  do {                                               \
    _tile_zero(C);                                   \
    _tile_loadd(A, x, stride);                       \
    _tile_loadd(B, weights, 64);                     \
    _tile_dpbsud(C, A, B);                           \
  } while (0)

// The tile products of blocks [4 chunk, 4 chunk + 4) (those below
// num_blocks) of the group src (PackedRows or PanelRows), for the 16 tokens
// whose codes start at x: tile C j = [16 tokens, 16 rows] of block 4 chunk + j.
template <class Src>
ZL_AMX inline void amx_chunk_products(const Src& src, const int8_t* x, int64_t n, int64_t num_blocks,
                                      int64_t chunk) {
  const int64_t b = chunk * kAmxChunk;
  ZL_AMX_BLOCK_DOT(0, 4, 6, x + b * 32, n, src.tile(b));
  if (b + 1 < num_blocks) ZL_AMX_BLOCK_DOT(1, 5, 7, x + (b + 1) * 32, n, src.tile(b + 1));
  if (b + 2 < num_blocks) ZL_AMX_BLOCK_DOT(2, 4, 6, x + (b + 2) * 32, n, src.tile(b + 2));
  if (b + 3 < num_blocks) ZL_AMX_BLOCK_DOT(3, 5, 7, x + (b + 3) * 32, n, src.tile(b + 3));
}

// Tiles C 0..3 (those of blocks below num_blocks) to dots[0..3].
ZL_AMX inline void amx_chunk_store(int64_t num_blocks, int64_t chunk, int32_t (*dots)[kAmxTokens][kGroup]) {
  const int64_t b = chunk * kAmxChunk;
  _tile_stored(0, dots[0], 64);
  if (b + 1 < num_blocks) _tile_stored(1, dots[1], 64);
  if (b + 2 < num_blocks) _tile_stored(2, dots[2], 64);
  if (b + 3 < num_blocks) _tile_stored(3, dots[3], 64);
  amx_stores_done();
}

// The tile loads of the weights do not train the hardware prefetchers: a
// decode step, which reads each weight once, waited on memory in tdpbsud
// (half of the AMX kernel's samples), so the kernel reads ahead itself. When
// the tiles read the packed codes with one token tile, into L1 a few chunks
// ahead; otherwise (several token tiles, or a panel), the next group's
// packed codes go to L2 spread over the current group's passes, and the
// memory stream never pauses. The groups' codes are one sequential stream:
// reading ahead may cross into the next group, or past the matrix
// (prefetches do not fault).
constexpr int64_t kAmxPrefetchChunks = 2;

struct AmxReadAhead {
  const uint8_t* at;  // where the next prefetch starts
  int64_t bytes;      // bytes per chunk
  bool l1;            // the group's own codes into L1 (at: the group), or the next group's into L2
};

template <decltype(_MM_HINT_T0) Hint>  // GCC: enum _mm_hint; clang: int
ZL_AMX inline void amx_prefetch(const uint8_t* codes, int64_t bytes) {
  for (int64_t at = 0; at < bytes; at += 64) _mm_prefetch(reinterpret_cast<const char*>(codes + at), Hint);
}

// One group of 16 rows from rg (src: its packed codes or its panel) x
// tokens [t_begin, t_begin + m num_tiles) on the AMX tiles (Part: one tile
// of m < 16 tokens, whose float steps stop at m): each block's weight tile
// (micro()'s v[k]) times 16 tokens' int8 codes in one tdpbsud give every
// token's integer dots D_i, the integers vpdpbusd gives; then block_step
// per token and block in order, as micro(). Same bits. The tile products of
// the next 4 blocks are issued before the float steps of the last 4 and
// stored after them, so that the two units overlap. src by value: its
// pointers stay in registers (behind a reference, every store to y might
// change them).
template <DType D, bool Part, class Src>
ZL_AMX void amx_group(const Src src, const WeightMatrix& w, const MatmulInput& in, int64_t rg, int64_t row_begin,
                      int64_t row_end, int64_t t_begin, int64_t num_tiles, int m, AmxReadAhead* ahead, float* y,
                      int64_t ldy) {
  const int64_t n = in.cols, num_blocks = n / 32, num_chunks = (num_blocks + kAmxChunk - 1) / kAmxChunk;
  alignas(64) int32_t dots[kAmxChunk][kAmxTokens][kGroup];
  for (int64_t t0 = t_begin; t0 < t_begin + num_tiles * m; t0 += m) {
    const int8_t* x = in.xq + t0 * n;
    __m512 acc[kAmxTokens];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    amx_chunk_products(src, x, n, num_blocks, 0);
    amx_chunk_store(num_blocks, 0, dots);
    for (int64_t chunk = 0; chunk < num_chunks; ++chunk) {
      if (ahead->l1) {
        amx_prefetch<_MM_HINT_T0>(ahead->at + (chunk + kAmxPrefetchChunks) * ahead->bytes, ahead->bytes);
      } else {
        amx_prefetch<_MM_HINT_T1>(ahead->at, ahead->bytes);
        ahead->at += ahead->bytes;
      }
      const bool next = chunk + 1 < num_chunks;
      if (next) amx_chunk_products(src, x, n, num_blocks, chunk + 1);
      for (int j = 0; j < kAmxChunk && chunk * kAmxChunk + j < num_blocks; ++j) {
        const int64_t b = chunk * kAmxChunk + j;
        BlockScales s;
        src.block_scales(b, &s);
        // xtiles: dx, then xds or 128 xds as block_corrections picks.
        const float* xs = in.xtiles + (t0 / kAmxTokens * num_blocks + b) * 3 * kAmxTokens;
        const float* xc = xs + (kMinTerm<D> ? 1 : 2) * kAmxTokens;
        for (int t = 0; t < kAmxTokens && (!Part || t < m); ++t) {
          const __m512 dot = _mm512_cvtepi32_ps(_mm512_load_si512(dots[j][t]));
          acc[t] = block_step<D>(s, dot, _mm512_set1_ps(xs[t]), _mm512_set1_ps(xc[t]), acc[t]);
        }
      }
      if (next) amx_chunk_store(num_blocks, chunk + 1, dots);
    }
    const GroupStore out = group_store<D>(w, rg, row_begin, row_end, y, ldy);
    for (int t = 0; t < m; ++t) out.store(t0 + t, acc[t]);
  }
}

}  // namespace

template <DType D>
ZL_AMX void amx_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                       int64_t full, int part, float* y, int64_t ldy) {
  const int64_t num_blocks = in.cols / 32, num_chunks = (num_blocks + kAmxChunk - 1) / kAmxChunk;
  const int64_t group_bytes = num_blocks * packed_code_bytes(D), passes = full + (part > 0);
  // The bytes of the next group to read ahead per chunk and pass.
  const int64_t step = (group_bytes / (passes * num_chunks) + 63) / 64 * 64;
  uint8_t* panel = kAmxDirect<D> ? nullptr : panel_storage(num_blocks);
  amx_configure();
  for (int64_t rg = row_begin / kGroup * kGroup; rg < row_end; rg += kGroup) {
    PackedRows<D> packed;
    packed.at_group(w, rg / kGroup);
    AmxReadAhead ahead{packed.codes + group_bytes, step, false};
    if (kAmxDirect<D> && passes == 1) ahead = AmxReadAhead{packed.codes, kAmxChunk * packed_code_bytes(D), true};
    auto run = [&](auto src) {
      if (full > 0) amx_group<D, false>(src, w, in, rg, row_begin, row_end, 0, full, kAmxTokens, &ahead, y, ldy);
      if (part > 0) amx_group<D, true>(src, w, in, rg, row_begin, row_end, kAmxTokens * full, 1, part, &ahead, y, ldy);
    };
    if constexpr (kAmxDirect<D>) {
      run(packed);
    } else {
      fill_panel_group<D>(packed, num_blocks, panel);
      run(PanelRows<D>{panel});
    }
  }
  _tile_release();
}

#define ZL_AMX_TOKENS(D)                                                                             \
  template void amx_tokens<D>(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, \
                              int64_t full, int part, float* y, int64_t ldy);
ZL_AMX_TOKENS(DType::kQ8_0)
ZL_AMX_TOKENS(DType::kQ4_0)
ZL_AMX_TOKENS(DType::kI8)
ZL_AMX_TOKENS(DType::kQ5_0)
ZL_AMX_TOKENS(DType::kQ5_1)
ZL_AMX_TOKENS(DType::kIQ4_NL)
ZL_AMX_TOKENS(DType::kQ4_K)
ZL_AMX_TOKENS(DType::kQ5_K)
ZL_AMX_TOKENS(DType::kIQ4_XS)

}  // namespace zl::cpu::quant_avx512
