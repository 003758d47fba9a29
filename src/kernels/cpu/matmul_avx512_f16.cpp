// AVX-512 kernel for packed f16 weights (matmul.h: per group of 16 rows,
// column k's 16 values in one 32-byte vector, the vectors of a panel of 3
// groups side by side column after column). This CPU class has no
// AVX512-FP16, so vcvtph2ps widens each vector exactly to 16 f32 weights,
// which multiply the f32 activation x[t][k] broadcast (FMA, f32 sums), one
// 16-row accumulator per token: no horizontal sums, no activation rounding.
//
// Every output is one FMA chain over k = 0, 1, ..., cols - 1 from zero,
// whatever the tile (NG groups x T tokens) that computes it, so a token's
// result is bit-identical alone (decode) or in any batch, tile and thread
// split (batch invariance), and needs no partial sums to be combined. The
// chains' latency is hidden by running NG x T of them at once instead, NG
// being the 1-3 groups of a panel (matmul.h) in the thread's rows, so that a
// tile reads one sequential stream:
//   * decode (T = 1): 3 chains, the panel's stream prefetched ahead (memory
//     bound: the weights are read once); one sequential stream reads faster
//     than separate group streams, and 1 chain is latency bound;
//   * prefill and batches: T tokens (up to kMaxTileTokens) x 3 groups, so
//     each widened weight vector feeds T FMAs and each broadcast 3; the
//     caller's row blocks keep the weights in L2 while the token tiles pass
//     (matmul.cpp rows_per_block), the tile's activations stay in L1/L2.
//     3 groups x 8 tokens ran fastest of the shapes timed, about one 16-lane
//     FMA per cycle (bench/results/code_notes.md#f16-avx-512-tiles).
#include "kernels/cpu/immintrin_quiet.h"

#include <algorithm>

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

namespace zl::cpu {
namespace {

// Tokens per register tile: 3 groups x 8 tokens = 24 accumulators, plus 3
// weight vectors and a broadcast, in the 32 zmm registers.
constexpr int kMaxTileTokens = 8;
// Columns read ahead on a panel's stream: 6 KiB for 3 groups; farther, or
// into L2 instead, read no faster (bench/results/code_notes.md#f16-avx-512-tiles).
constexpr int64_t kPrefetchColumns = 64;

// Groups g0 .. g0 + NG - 1 (of one panel) x tokens t0 .. t0 + T - 1; rows
// outside [row_lo, row_end) are computed but not stored.
template <int NG, int T>
ZL_AVX512 void groups_x_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t g0, int64_t row_lo,
                               int64_t row_end, int64_t t0, float* y, int64_t ldy) {
  const int64_t n = in.cols, num_groups = (w.rows + kPackRows - 1) / kPackRows;
  const int64_t panel = g0 / kF16PanelGroups * kF16PanelGroups;  // the panel's first group
  // Halfs from one column's vectors to the next: the panel's groups x 16.
  const int64_t stride = std::min(kF16PanelGroups, num_groups - panel) * kPackRows;
  // Group g0's vector of column 0; group g0 + g's is g x 16 halfs on.
  const uint16_t* p = reinterpret_cast<const uint16_t*>(w.packed) + panel * n * kPackRows + (g0 - panel) * kPackRows;
  const float* xr[T];
  for (int t = 0; t < T; ++t) xr[t] = in.x + (t0 + t) * n;
  __m512 acc[NG][T];
  for (int g = 0; g < NG; ++g)
    for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
  auto column = [&](int64_t k) ZL_AVX512 {
    __m512 wv[NG];
    for (int g = 0; g < NG; ++g)
      wv[g] = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(p + k * stride + g * kPackRows)));
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_set1_ps(xr[t][k]);
      for (int g = 0; g < NG; ++g) acc[g][t] = _mm512_fmadd_ps(wv[g], xv, acc[g][t]);
    }
  };
  int64_t k = 0;
  for (; k + 2 <= n; k += 2) {  // two columns: NG 64-byte lines of the stream
    // Past the panel's end this reads ahead into the next panel, the next tile.
    for (int line = 0; line < NG; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(p + (k + kPrefetchColumns) * stride) + 64 * line, _MM_HINT_T0);
    column(k);
    column(k + 1);
  }
  if (k < n) column(k);
  for (int g = 0; g < NG; ++g) {
    const int64_t rg = (g0 + g) * kPackRows;
    const __mmask16 m = group_store_mask(rg, row_lo, row_end);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * ldy + rg, m, acc[g][t]);
  }
}

// The groups that hold rows [row_begin, row_end), a tile per panel (fewer
// groups where the range cuts a panel or the last panel is short).
template <int T>
ZL_AVX512 void row_groups(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                          int64_t t0, float* y, int64_t ldy) {
  static_assert(kF16PanelGroups == 3, "one tile shape per panel size below");
  const int64_t g_end = (row_end + kPackRows - 1) / kPackRows;
  for (int64_t g = row_begin / kPackRows; g < g_end;) {
    const int64_t count = std::min(g_end, (g / kF16PanelGroups + 1) * kF16PanelGroups) - g;
    if (count == 3) groups_x_tokens<3, T>(w, in, g, row_begin, row_end, t0, y, ldy);
    if (count == 2) groups_x_tokens<2, T>(w, in, g, row_begin, row_end, t0, y, ldy);
    if (count == 1) groups_x_tokens<1, T>(w, in, g, row_begin, row_end, t0, y, ldy);
    g += count;
  }
}

// The last `left` (< kMaxTileTokens) tokens from t0 as one tile.
template <int T>
ZL_AVX512 void token_tail(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                          int64_t t0, int64_t left, float* y, int64_t ldy) {
  if constexpr (T > 0) {
    if (left == T) return row_groups<T>(w, in, row_begin, row_end, t0, y, ldy);
    token_tail<T - 1>(w, in, row_begin, row_end, t0, left, y, ldy);
  }
}

}  // namespace

ZL_AVX512 void packed_f16_tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + kMaxTileTokens <= in.num_tokens; t += kMaxTileTokens)
    row_groups<kMaxTileTokens>(w, in, row_begin, row_end, t, y, ldy);
  token_tail<kMaxTileTokens - 1>(w, in, row_begin, row_end, t, in.num_tokens - t, y, ldy);
}

}  // namespace zl::cpu
