// AVX-512 VNNI tile kernels for the quantized formats (Q8_0, Q4_0, I8, and
// packed Q5_0, Q5_1, IQ4_NL and the super-block formats): the micro-kernel
// and the order in which a call walks rows and tokens (decode batches in
// one pass or strip by strip with a read-ahead, prefill by token tiles, or
// the AMX tiles). The rows' layout and each block's math are in
// quant_rows_avx512.h.
#include "kernels/cpu/quant_rows_avx512.h"

#include <algorithm>

namespace zl::cpu {
namespace {

using namespace quant_avx512;

// Up to two streams read ahead (ReadAhead), stepped once per block by
// micro(): a strip's reads the next strip's packed codes and scales, each
// of its token tiles 1 / (token tiles) of them; a one pass's, its group's
// codes.
struct BlockAhead {
  ReadAhead stream[2];
  int64_t bytes[2] = {0, 0};  // each stream's per block
  ZL_AVX512 void step() {
    stream[0].step(bytes[0]);
    stream[1].step(bytes[1]);
  }
};

// G groups of 16 rows (src[g]) from row r0 on x tokens t0.. t0+T-1; rows
// outside [row_lo, row_end) are computed but not stored; stream: as
// group_store's.
template <DType D, int G, int T, class Src>
ZL_AVX512 void micro(const Src* src, const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t row_lo,
                     int64_t row_end, int64_t t0, float* y, int64_t ldy, BlockAhead* ahead, bool stream = false) {
  const int64_t n = in.cols, num_blocks = n / 32;
  // The read-ahead's state in a local for the loop, where the tile holds 8
  // accumulators or more: through the pointer GCC loaded and stored it
  // every block (8192 x 2048, 64 tokens, one thread, q8_0: 6.63-6.68 ms,
  // with the local 6.39-6.55); with fewer the local was the slower (one
  // token of q4_k, 2048 x 2048 from memory: 0.066-0.070 -> 0.074-0.076 ms).
  constexpr bool kLocalAhead = G * T >= 8;
  BlockAhead local;
  if (kLocalAhead && ahead != nullptr) local = *ahead;
  BlockAhead* const next = kLocalAhead ? &local : ahead;
  // The loops over groups and tokens are unrolled early (the pragmas), so
  // that GCC's scalar replacement turns acc into registers: unrolled later,
  // acc stayed an array in memory too, and a 2 x 4 tile stored its 8
  // accumulators every block (with the local read-ahead, matmul_bench 8192
  // x 2048, 64 tokens, one thread: q8_0 6.62-6.71 -> 6.36-6.52 ms, q4_k
  // 7.48-7.79 -> 7.21-7.46).
  __m512 acc[G][T];
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g)
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) acc[g][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    if (ahead != nullptr) next->step();
    __m512i v[G][8];
    BlockScales s[G];
    for (int g = 0; g < G; ++g) src[g].template block<T>(b, v[g], &s[g]);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const int64_t tok = t0 + t;
      const uint8_t* xq = reinterpret_cast<const uint8_t*>(in.xq + tok * n + b * 32);
      const __m512 dx = _mm512_set1_ps(in.xd[tok * num_blocks + b]);
      const __m512 xc = _mm512_set1_ps(block_corrections<D>(in)[tok * num_blocks + b]);
      const int32_t* sum16 = kHalfScales<D> ? in.xsum16 + (tok * num_blocks + b) * 2 : nullptr;
#pragma GCC unroll 16
      for (int g = 0; g < G; ++g) acc[g][t] = token_block<D>(v[g], s[g], xq, sum16, dx, xc, acc[g][t]);
    }
  }
  if (kLocalAhead && ahead != nullptr) *ahead = local;
#pragma GCC unroll 16
  for (int g = 0; g < G; ++g) {
    const GroupStore out = group_store<D>(w, r0 + g * kGroup, row_lo, row_end, y, ldy, stream);
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) out.store(t0 + t, acc[g][t]);
  }
}

// Rows [row_begin, row_end) x tokens t0.. t0+T-1; panel: nullptr, or the
// rows' entries (panel_entry_bytes) from the first computed row on:
// row_begin, or for a packed matrix the start of its group; ahead: nullptr,
// or the next strip's read-ahead (strip_tiles); stream: as group_store's.
template <DType D, int T>
ZL_AVX512 void rows_for_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               int64_t t0, float* y, int64_t ldy, const uint8_t* panel, BlockAhead* ahead,
                               bool stream) {
  const int64_t group_bytes = in.cols / 32 * panel_entry_bytes<D>(w.packed != nullptr);
  // Packed groups start at multiples of 16 rows; the rows before row_begin
  // in the first one are not stored.
  const int64_t first = w.packed != nullptr ? row_begin / kGroup * kGroup : row_begin;
  auto run = [&]<int G>(int64_t r0) {
    auto entries = [&](int g) { return panel + ((r0 - first) / kGroup + g) * group_bytes; };
    if constexpr (kScalePanel<D>)
      if (panel != nullptr && w.packed != nullptr) {
        ScalePanelRows<D> src[G];
        for (int g = 0; g < G; ++g) {
          src[g].rows.at_group(w, r0 / kGroup + g);
          src[g].scales = entries(g);
        }
        return micro<D, G, T>(src, w, in, r0, row_begin, row_end, t0, y, ldy, ahead, stream);
      }
    if (panel != nullptr) {
      PanelRows<D> src[G];
      for (int g = 0; g < G; ++g) src[g].blocks = entries(g);
      micro<D, G, T>(src, w, in, r0, row_begin, row_end, t0, y, ldy, ahead, stream);
    } else if (w.packed != nullptr) {
      PackedRows<D> src[G];
      for (int g = 0; g < G; ++g) src[g].at_group(w, r0 / kGroup + g);
      micro<D, G, T>(src, w, in, r0, row_begin, row_end, t0, y, ldy, ahead, stream);
    } else if constexpr (D == DType::kQ8_0 || D == DType::kQ4_0 || D == DType::kI8) {  // the others: packed only
      if constexpr (G == 2) {
        const StoredRows<D> src[2] = {StoredRows<D>(w, r0, row_end), StoredRows<D>(w, r0 + kGroup, row_end)};
        micro<D, G, T>(src, w, in, r0, r0, row_end, t0, y, ldy, ahead, stream);
      } else {
        const StoredRows<D> src[1] = {StoredRows<D>(w, r0, row_end)};
        micro<D, G, T>(src, w, in, r0, r0, row_end, t0, y, ldy, ahead, stream);
      }
    }
  };
  int64_t r = first;
  // Tiles of 4 tokens take two groups, so that each token's codes serve 32
  // rows; tiles of 1-3 tokens (the rest of a batch, or a stored matrix's
  // decode step) keep to one group, as 32 concurrent row streams from
  // memory outrun the hardware prefetchers (16 streams read ~1.5x faster
  // here).
  if constexpr (T >= 4)
    for (; r + 2 * kGroup <= row_end; r += 2 * kGroup) run.template operator()<2>(r);
  for (; r < row_end; r += kGroup) run.template operator()<1>(r);
}

template <DType D>
ZL_AVX512 void token_tiles(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy, const uint8_t* panel, BlockAhead* ahead = nullptr,
                           bool stream = false) {
  if constexpr (kAmxForm<D>)
    if (panel == nullptr && use_amx<D>(w, in)) {
      amx_tokens<D>(w, in, row_begin, row_end, in.num_tokens / kAmxTokens,
                    static_cast<int>(in.num_tokens % kAmxTokens), y, ldy);
      return;
    }
  each_token_tile(in.num_tokens, [&]<int T>(int64_t t0) {
    rows_for_tokens<D, T>(w, in, row_begin, row_end, t0, y, ldy, panel, ahead, stream);
  });
}

// A decode batch of 1-16 tokens on packed rows runs as one pass: every
// token on each group of 16 packed rows, the codes read kOnePassAhead
// blocks ahead in the one stream the groups make, so they come from memory
// once and the stream does not wait on the hardware prefetchers, and each
// block's codes serve every token while they are in registers. (Strips of
// token tiles of 4 left the memory idle while the later tiles ran from L2:
// q8_0 / q4_k at 8 tokens from memory ran at 0.65 / 0.37 of the weight
// read's rate, then 0.67-0.74 / 0.51-0.56, and at 16 tokens a 2048 x 2048
// matmul from memory took 0.32-0.35 / 0.33 ms, then 0.26-0.27 / 0.26;
// without the read-ahead, 1 token of q4_0 / q4_k streamed ~20 GB/s against
// q8_0's ~27: bench/results/roofline.) At 16 tokens the 16 accumulators
// and a block's 8 code vectors fit the 32 registers. (From 10 tokens the
// pass took two groups at a time while the accumulators spilled anyway;
// held in registers since the tiles unroll early (micro), one group is
// faster: 2048 x 2048 from memory, one thread, ms min of three rounds, 16
// tokens q8_0 0.438 -> 0.387, q4_k 0.480 -> 0.444, 10 tokens q8_0 0.289 ->
// 0.249.)
constexpr int64_t kOnePassMaxTokens = 4 * kTokenTile;
constexpr int64_t kOnePassAhead = 16;

// f.template operator()<T>() for T = num_tokens (1 <= num_tokens <= kOnePassMaxTokens).
template <int T = 1, class F>
inline void with_token_count(int64_t num_tokens, F&& f) {
  if constexpr (T == kOnePassMaxTokens) {
    f.template operator()<T>();
  } else if (num_tokens == T) {
    f.template operator()<T>();
  } else {
    with_token_count<T + 1>(num_tokens, f);
  }
}

// Not where the AMX tiles take the batch (Q8_0 and I8 from 8 tokens, the
// other per-32 formats at 16).
template <DType D>
bool one_pass(const WeightMatrix& w, const MatmulInput& in) {
  return w.packed != nullptr && in.num_tokens <= kOnePassMaxTokens && !use_amx<D>(w, in);
}

template <DType D>
ZL_AVX512 void one_pass_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               float* y, int64_t ldy) {
  // Group by group, its codes read kOnePassAhead blocks ahead.
  auto run = [&]<int T>() {
    for (int64_t rg = row_begin / kGroup * kGroup; rg < row_end; rg += kGroup) {
      PackedRows<D> src[1];
      src[0].at_group(w, rg / kGroup);
      BlockAhead ahead;
      ahead.bytes[0] = packed_code_bytes(D);
      ahead.stream[0] = ReadAhead{src[0].codes + kOnePassAhead * packed_code_bytes(D)};
      micro<D, 1, T>(src, w, in, rg, row_begin, row_end, 0, y, ldy, &ahead);
    }
  };
  with_token_count(in.num_tokens, run);
}

// Rows [row_begin, row_end) x all tokens, strip by strip of 32 rows (from
// the first computed row, as rows_for_tokens counts them): every token tile
// runs on a strip before the next. fill: each group of 16 rows is read
// once, as the tiles would read it (StoredRows or PackedRows), into a
// panel, which every token tile then reads (packed kScalePanel formats:
// their scales alone). A decode batch of 17-64 tokens
// of packed rows reads the next strip ahead (ReadAhead; dummy:llama-1b on
// the Xeon VM without AMX, q8_0, 16 / 32 tokens a step: 152-154 -> 173-194 /
// 198 -> 232-234 tokens/s, when 16 tokens still took the strips); fewer
// than 17 run as one pass (one_pass_tokens). The outputs go past the caches
// where y allows (streams_outputs; dummy:llama-1b decode steps, one thread,
// 32 / 64 tokens: q4_0 +9 / +14%, q4_k +16 / +12%, q8_0 +9 / +11%;
// bench/results/roofline).
template <DType D>
ZL_AVX512 void strip_tiles(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy, bool fill) {
  const int64_t num_blocks = in.cols / 32;
  uint8_t* panel = fill ? panel_storage(num_blocks) : nullptr;
  const int64_t first = w.packed != nullptr ? row_begin / kGroup * kGroup : row_begin;
  const bool read_ahead = w.packed != nullptr && group_first(in.num_tokens);
  // From first on: a stored matrix's strips can start inside a group.
  const bool stream = group_first(in.num_tokens) && streams_outputs(y + first, ldy);
  constexpr int64_t kStripGroups = kPanelRows / kGroup;
  for (int64_t r0 = first; r0 < row_end; r0 += kPanelRows) {
    const int64_t r1 = std::min(row_end, r0 + kPanelRows);
    for (int64_t g = 0; fill && r0 + g * kGroup < r1; ++g) {
      uint8_t* entries = panel + g * num_blocks * panel_entry_bytes<D>(w.packed != nullptr);
      if (w.packed != nullptr) {
        PackedRows<D> src;
        src.at_group(w, r0 / kGroup + g);
        if constexpr (kScalePanel<D>) {
          fill_scale_panel_group<D>(src, num_blocks, entries);
        } else {
          fill_panel_group<D>(src, num_blocks, entries);
        }
      } else if constexpr (D == DType::kQ8_0 || D == DType::kQ4_0 || D == DType::kI8) {
        fill_panel_group<D>(StoredRows<D>(w, r0 + g * kGroup, r1), num_blocks, entries);
      }
    }
    BlockAhead ahead;
    if (read_ahead) {
      PackedRows<D> next;
      next.at_group(w, r0 / kGroup + kStripGroups);
      ahead.bytes[0] = kStripGroups * packed_code_bytes(D);
      ahead.stream[0] = ReadAhead::over_tiles(next.codes, in.num_tokens);
      if constexpr (dtype_has_super_blocks(D)) {
        ahead.bytes[1] = kStripGroups * packed_kscale_bytes(D) / 8;
        ahead.stream[1] = ReadAhead::over_tiles(next.kscales, in.num_tokens);
      } else if constexpr (D != DType::kI8) {
        ahead.bytes[1] = kStripGroups * PackedRows<D>::kScaleLanes * 2;
        ahead.stream[1] = ReadAhead::over_tiles(reinterpret_cast<const uint8_t*>(next.scales), in.num_tokens);
      }
    }
    token_tiles<D>(w, in, std::max(row_begin, r0), r1, y, ldy, panel, read_ahead ? &ahead : nullptr, stream);
  }
  // Non-temporal stores are not ordered with later ones: the fence puts them
  // before the pool's report that these rows are done.
  if (stream) _mm_sfence();
}

// Packed or stored Q8_0, Q4_0 and I8: the tiles read packed rows as they
// lie; stored ones through panels from kPanelMinTokens on, and the strips
// of packed Q4_0 (a decode batch past one pass) through a panel of its
// scales (kScalePanel).
template <DType D>
ZL_AVX512 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  const bool packed = w.packed != nullptr;
  if (one_pass<D>(w, in)) return one_pass_tokens<D>(w, in, row_begin, row_end, y, ldy);
  if (use_amx<D>(w, in) || (packed ? !group_first(in.num_tokens) : in.num_tokens < kPanelMinTokens))
    return token_tiles<D>(w, in, row_begin, row_end, y, ldy, nullptr);
  strip_tiles<D>(w, in, row_begin, row_end, y, ldy, /*fill=*/!(packed && kAmxDirect<D>));
}

// Formats read packed only (all but Q8_0, Q4_0 and I8).
template <DType D>
ZL_AVX512 void tile_packed(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy) {
  if (w.packed == nullptr) return tile_kernel_avx2(D)(w, in, row_begin, row_end, y, ldy);
  if (one_pass<D>(w, in)) return one_pass_tokens<D>(w, in, row_begin, row_end, y, ldy);
  if (use_amx<D>(w, in)) return token_tiles<D>(w, in, row_begin, row_end, y, ldy, nullptr);
  strip_tiles<D>(w, in, row_begin, row_end, y, ldy, /*fill=*/true);  // 17 tokens or more
}

}  // namespace

TileKernel tile_kernel_avx512_quant(DType dtype) {
  switch (dtype) {
    case DType::kQ8_0: return tile<DType::kQ8_0>;
    case DType::kQ4_0: return tile<DType::kQ4_0>;
    case DType::kI8: return tile<DType::kI8>;
    case DType::kQ5_0: return tile_packed<DType::kQ5_0>;
    case DType::kQ5_1: return tile_packed<DType::kQ5_1>;
    case DType::kIQ4_NL: return tile_packed<DType::kIQ4_NL>;
    case DType::kQ4_K: return tile_packed<DType::kQ4_K>;
    case DType::kQ5_K: return tile_packed<DType::kQ5_K>;
    case DType::kQ3_K: return tile_packed<DType::kQ3_K>;
    case DType::kQ2_K: return tile_packed<DType::kQ2_K>;
    case DType::kQ6_K: return tile_packed<DType::kQ6_K>;
    case DType::kIQ4_XS: return tile_packed<DType::kIQ4_XS>;
    default: return nullptr;
  }
}

}  // namespace zl::cpu
