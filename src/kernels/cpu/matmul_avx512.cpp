// AVX-512 tile kernels (F, BW, VL, VNNI; F16C for f16 scales).
//
// Register tiles of R rows x T tokens (4 x 4 at most: 16 accumulators) run
// over the whole reduction dimension with one vector accumulator per output,
// reduced horizontally at the end; each weight vector loaded is used for T
// tokens and each activation vector for R rows.
//
// Float formats: 16 weights are widened to f32 in registers (bf16: a 16-bit
// shift; f16: vcvtph2ps) and multiplied with f32 activations by FMA; the tail
// of a row that is not a multiple of 16 uses masked loads.
//
// Quantized formats: vpdpbusd multiplies unsigned by signed bytes, so the
// weight codes are made unsigned by an offset of 128 (Q8_0 and I8: code + 128,
// by flipping the top bit; Q4_0: 16 * the stored nibble = 16 * code + 128,
// with the block scale divided by 16, exact in f32) and the offset is taken
// back per block from the activation sum: for a block,
//   sum(w * x) = sum(u * x) - 128 * sum(x).
// One 512-bit register holds two blocks of 32; its 16 int32 lanes hold 8
// partial dots of each block, so each lane subtracts 16 * d_x * sum(q_x)
// (ds from quantize_activations) before the weight block scale is applied:
//   acc += d_w * (d_x * float(lanes) - 16 * ds),
// with d_x and 16 * ds pre-spread over the lanes (MatmulInput::xdv, xcv).
// Q4_0 weight scales and codes come from one masked load by vpermw; the next
// row tile is prefetched while decoding (T < 4), as short rows give the
// hardware prefetcher too little to learn from.
// GCC 12's AVX-512 headers trip -Wuninitialized inside _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"

#define ZL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,fma,f16c")))

namespace zl::cpu {
namespace {

template <DType D>
ZL_AVX512 inline __m512 load_f32x16(const uint8_t* row, int64_t k) {
  if constexpr (D == DType::kF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + k);
  } else if constexpr (D == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k)));
  } else {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * k));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType D>
ZL_AVX512 inline __m512 load_f32x16_masked(const uint8_t* row, int64_t k, __mmask16 m) {
  if constexpr (D == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + k);
  } else if constexpr (D == DType::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * k));
  } else {
    __m256i h = _mm256_maskz_loadu_epi16(m, row + 2 * k);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

template <DType D, int R, int T>
ZL_AVX512 void micro_float(const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0, float* y,
                           int64_t ldy) {
  const int64_t n = in.cols;
  const uint8_t* wr[R];
  const float* xr[T];
  for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  for (int t = 0; t < T; ++t) xr[t] = in.x + (t0 + t) * n;
  const int64_t next_tile = R * w.row_bytes();
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(xr[t] + k);
    for (int r = 0; r < R; ++r) {
      // The next row tile (see micro_quant).
      _mm_prefetch(reinterpret_cast<const char*>(wr[r] + next_tile) + k * (D == DType::kF32 ? 4 : 2), _MM_HINT_T0);
      __m512 wv = load_f32x16<D>(wr[r], k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (k < n) {
    __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1);
    __m512 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, xr[t] + k);
    for (int r = 0; r < R; ++r) {
      __m512 wv = load_f32x16_masked<D>(wr[r], k, m);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]);
}

template <DType D>
constexpr int64_t kBlockBytes = D == DType::kQ8_0 ? 34 : D == DType::kQ4_0 ? 18 : 32;

// 16-bit words 0-7 <- word a, 8-15 <- word b (for vpermw).
ZL_AVX512 inline __m512i word_pair_index(short a, short b) {
  return _mm512_castsi256_si512(
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(a)), _mm_set1_epi16(b), 1));
}

// Codes of blocks b, b+1 (or only b when one is false: upper half zero) as
// unsigned bytes, and their scales spread over the two halves. The f16 scales
// (and Q4_0's codes) come from one masked load of the two blocks' words,
// rearranged by vpermw; masked loads never touch memory past the blocks.
template <DType D>
ZL_AVX512 inline __m512i load_codes(const uint8_t* p, bool two, __m512* scale) {
  const __m512i top = _mm512_set1_epi8(static_cast<char>(0x80));
  if constexpr (D == DType::kQ8_0) {
    // Words: 0 scale of b, 1-16 codes of b, 17 scale of b+1.
    const __m512i raw = _mm512_maskz_loadu_epi16(two ? 0x3FFFF : 0x1, p);
    *scale = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(word_pair_index(0, 17), raw)));
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
    __m256i hi = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36)) : _mm256_setzero_si256();
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), top);
  } else if constexpr (D == DType::kQ4_0) {
    // Words: 0 scale of b, 1-8 its nibble pairs, 9 scale of b+1, 10-17 its nibble pairs.
    const __m512i raw = _mm512_maskz_loadu_epi16(two ? 0x3FFFF : 0x1FF, p);
    // The codes are taken as 16 * nibble (see the top of the file), so the scale is d / 16.
    *scale = _mm512_mul_ps(
        _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(word_pair_index(0, 9), raw))),
        _mm512_set1_ps(1.0f / 16.0f));
    // 128-bit lanes: b's bytes, b's bytes, b+1's, b+1's; lanes 0 and 2 take
    // the low nibbles (elements 0..15 of a block), lanes 1 and 3 the high ones.
    const __m512i idx = _mm512_set_epi16(17, 16, 15, 14, 13, 12, 11, 10, 17, 16, 15, 14, 13, 12, 11, 10,  //
                                         8, 7, 6, 5, 4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1);
    __m512i z = _mm512_permutexvar_epi16(idx, raw);
    z = _mm512_mask_slli_epi16(z, 0x00FF00FFu, z, 4);
    return _mm512_and_si512(z, _mm512_set1_epi8(static_cast<char>(0xf0)));
  } else {
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m256i hi = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)) : _mm256_setzero_si256();
    return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), top);
  }
}

// Where a quantized micro-kernel gets each row's codes and scales for blocks
// b, b+1: straight from the stored rows (decode: every byte is read once)...
template <DType D, int R>
struct StoredRows {
  const uint8_t* wr[R];
  int64_t next_tile;
  ZL_AVX512 StoredRows(const WeightMatrix& w, int64_t r0) : next_tile(R * w.row_bytes()) {
    for (int r = 0; r < R; ++r) wr[r] = w.row(r0 + r);
  }
  template <int T>
  ZL_AVX512 __m512i codes(int r, int64_t b, bool two, __m512* dw) const {
    // The next row tile (R rows further, the same offset) is what this
    // thread reads next: start it now, as the short rows give the hardware
    // prefetcher little to learn from.
    if constexpr (T < 4)
      _mm_prefetch(reinterpret_cast<const char*>(wr[r] + next_tile + b * kBlockBytes<D>), _MM_HINT_T0);
    return load_codes<D>(wr[r] + b * kBlockBytes<D>, two, dw);
  }
};

// ... or from a panel that load_codes filled once for many token tiles
// (prefill): codes [rows, pairs] and scales [rows, pairs], one vector each.
struct PanelRows {
  const uint8_t* code;  // [rows, pairs, 64]
  const float* scale;   // [rows, pairs, 16]
  int64_t num_pairs;
  template <int T>
  ZL_AVX512 __m512i codes(int r, int64_t b, bool /*two*/, __m512* dw) const {
    const int64_t i = r * num_pairs + b / 2;
    *dw = _mm512_load_ps(scale + i * 16);
    return _mm512_load_si512(code + i * 64);
  }
};

// Rows r0.. r0+R-1 (src's rows 0..R-1) x tokens t0.. t0+T-1. The arithmetic
// per output is the same whatever R, T and the source, so a row's result does
// not depend on the batch.
template <DType D, int R, int T, class Src>
ZL_AVX512 void micro_quant(const Src& src, const WeightMatrix& w, const MatmulInput& in, int64_t r0, int64_t t0,
                           float* y, int64_t ldy) {
  const int64_t n = in.cols, num_blocks = n / 32, num_pairs = (num_blocks + 1) / 2;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < num_blocks; b += 2) {
    const bool two = b + 1 < num_blocks;
    // Codes and spread scales of each token; the offset corrections (cx) are
    // read from memory where used, which keeps 16 accumulators in registers.
    __m512i xv[T];
    __m512 dx[T];
    const float* cx[T];
    for (int t = 0; t < T; ++t) {
      const int64_t tok = t0 + t;
      xv[t] = _mm512_maskz_loadu_epi8(two ? ~0ull : 0xffffffffull, in.xq + tok * n + b * 32);
      dx[t] = _mm512_loadu_ps(in.xdv + (tok * num_pairs + b / 2) * 16);
      cx[t] = in.xcv + (tok * num_pairs + b / 2) * 16;
    }
    for (int r = 0; r < R; ++r) {
      __m512 dw;
      __m512i wv = src.template codes<T>(r, b, two, &dw);
      for (int t = 0; t < T; ++t) {
        __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, xv[t]);
        __m512 f = _mm512_fmsub_ps(dx[t], _mm512_cvtepi32_ps(dot), _mm512_loadu_ps(cx[t]));
        acc[r][t] = D == DType::kI8 ? _mm512_add_ps(acc[r][t], f) : _mm512_fmadd_ps(dw, f, acc[r][t]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    const float row_scale = D == DType::kI8 ? w.scales[r0 + r] : 1.0f;
    for (int t = 0; t < T; ++t) y[(t0 + t) * ldy + r0 + r] = _mm512_reduce_add_ps(acc[r][t]) * row_scale;
  }
}

constexpr bool is_quantized(DType d) { return d == DType::kQ8_0 || d == DType::kQ4_0 || d == DType::kI8; }

// Rows [row_begin, row_end) x tokens t0.. t0+T-1. panel: nullptr, or the
// decoded rows from row_begin on.
template <DType D, int T>
ZL_AVX512 void rows_for_tokens(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                               int64_t t0, float* y, int64_t ldy, const PanelRows* panel) {
  int64_t r = row_begin;
  if constexpr (is_quantized(D)) {
    auto run = [&]<int R>(int64_t row) {
      if (panel != nullptr) {
        const int64_t offset = (row - row_begin) * panel->num_pairs;
        micro_quant<D, R, T>(PanelRows{panel->code + offset * 64, panel->scale + offset * 16, panel->num_pairs}, w,
                             in, row, t0, y, ldy);
      } else {
        micro_quant<D, R, T>(StoredRows<D, R>(w, row), w, in, row, t0, y, ldy);
      }
    };
    for (; r + 4 <= row_end; r += 4) run.template operator()<4>(r);
    for (; r < row_end; ++r) run.template operator()<1>(r);
  } else {
    for (; r + 4 <= row_end; r += 4) micro_float<D, 4, T>(w, in, r, t0, y, ldy);
    for (; r < row_end; ++r) micro_float<D, 1, T>(w, in, r, t0, y, ldy);
  }
}

template <DType D>
ZL_AVX512 void token_tiles(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end,
                           float* y, int64_t ldy, const PanelRows* panel) {
  int64_t t = 0;
  for (; t + 4 <= in.num_tokens; t += 4) rows_for_tokens<D, 4>(w, in, row_begin, row_end, t, y, ldy, panel);
  switch (in.num_tokens - t) {
    case 3: return rows_for_tokens<D, 3>(w, in, row_begin, row_end, t, y, ldy, panel);
    case 2: return rows_for_tokens<D, 2>(w, in, row_begin, row_end, t, y, ldy, panel);
    case 1: return rows_for_tokens<D, 1>(w, in, row_begin, row_end, t, y, ldy, panel);
    default: return;
  }
}

// From this many tokens on, quantized rows are decoded once into a panel
// (unsigned codes and spread scales, 128 bytes per row and pair of blocks) and
// every token tile reads the panel instead of decoding the rows again.
constexpr int64_t kPanelMinTokens = 8;
constexpr int64_t kPanelRows = 32;

template <DType D>
ZL_AVX512 void tile(const WeightMatrix& w, const MatmulInput& in, int64_t row_begin, int64_t row_end, float* y,
                    int64_t ldy) {
  if constexpr (is_quantized(D)) {
    if (in.num_tokens >= kPanelMinTokens) {
      const int64_t num_blocks = in.cols / 32, num_pairs = (num_blocks + 1) / 2;
      // 64-byte aligned: codes [kPanelRows, pairs, 64] then scales [kPanelRows, pairs, 16].
      thread_local std::vector<uint8_t> storage;
      const int64_t entries = kPanelRows * num_pairs;
      storage.resize(static_cast<size_t>(entries * 128 + 64));
      uint8_t* code = storage.data() + (-reinterpret_cast<uintptr_t>(storage.data()) & 63);
      float* scale = reinterpret_cast<float*>(code + entries * 64);
      for (int64_t r0 = row_begin; r0 < row_end; r0 += kPanelRows) {
        const int64_t r1 = std::min(row_end, r0 + kPanelRows);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t b = 0; b < num_blocks; b += 2) {
            const int64_t i = (r - r0) * num_pairs + b / 2;
            __m512 dw;
            _mm512_store_si512(code + i * 64, load_codes<D>(w.row(r) + b * kBlockBytes<D>, b + 1 < num_blocks, &dw));
            _mm512_store_ps(scale + i * 16, dw);
          }
        const PanelRows panel{code, scale, num_pairs};
        token_tiles<D>(w, in, r0, r1, y, ldy, &panel);
      }
      return;
    }
  }
  token_tiles<D>(w, in, row_begin, row_end, y, ldy, nullptr);
}

}  // namespace

TileKernel tile_kernel_avx512(DType dtype) {
  switch (dtype) {
    case DType::kF32: return tile<DType::kF32>;
    case DType::kF16: return tile<DType::kF16>;
    case DType::kBF16: return tile<DType::kBF16>;
    case DType::kQ8_0: return tile<DType::kQ8_0>;
    case DType::kQ4_0: return tile<DType::kQ4_0>;
    case DType::kI8: return tile<DType::kI8>;
  }
  return nullptr;
}

}  // namespace zl::cpu
