// Matrix products for linear layers: y = x · Wᵀ (+ b), with W stored as
// PyTorch stores a Linear weight, [out_features, in_features], in any weight
// format (f32, f16, bf16 as stored; GGUF Q8_0 / Q4_0 / Q5_0 / Q5_1 / IQ4_NL
// blocks and Q2_K / Q3_K / Q4_K / Q5_K / Q6_K / IQ4_XS super-blocks; int8 with a
// scale per row). Float formats are
// widened in registers and multiplied with the f32
// activations (exact products, f32 sums), except packed bf16 on AVX512-BF16
// (bf16_dot_supported below). Quantized formats multiply int8
// weights with activations quantized to int8 blocks of 32 (as llama.cpp does):
// integer dot products per block, then f32 scales; the activation rounding
// costs ~0.3% relative error per product (see tests/kernels/matmul_test.cpp).
//
// Work is split over output rows, so each thread streams its own slice of W
// once per call and applies each weight block to every token of the batch
// while it is in registers / cache. Kernels are chosen at run time (AVX-512
// with VNNI, AVX2+FMA, or the scalar reference), overridable with
// ZEROLAYER_ISA=scalar|avx2|avx512 for tests and benchmarks.
#pragma once

#include <cstdint>
#include <span>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace zl {

// A weight matrix as it lies in memory (a mapped file or owned storage).
struct WeightMatrix {
  DType dtype = DType::kF32;
  const void* data = nullptr;      // [rows, row_bytes()]
  int64_t rows = 0;                // out_features
  int64_t cols = 0;                // in_features; a multiple of the format's block (32 or 256)
  const float* scales = nullptr;   // [rows], I8 only
  // Optional copy of a matrix (any format but f32) in the packed layout below,
  // which the AVX-512 kernels stream instead of `data` (that stays valid).
  const uint8_t* packed = nullptr;

  int64_t row_bytes() const { return cols / dtype_block_elems(dtype) * dtype_block_bytes(dtype); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
  int64_t num_bytes() const { return rows * row_bytes() + (scales != nullptr ? rows * 4 : 0); }
  // The data as f32; the matrix must be f32.
  const float* f32() const;
  // Dequantizes row r into dst[cols].
  void row_to_f32(int64_t r, float* dst) const;
};

namespace cpu {

// Packed layout of a bf16, f16 or quantized matrix, made once at load (as llama.cpp's
// online repack does) so that decoding streams one sequential run of aligned
// vectors instead of 16 short row streams that are transposed in registers.
// Rows go in groups of 16 (the last one padded with zero rows); with
// G = ceil(rows / 16) groups and B = cols / 32 blocks:
//   codes  [G, B, vectors of 64 bytes], 32-bit lane i of each vector from row 16g + i:
//          Q8_0 / I8: 8 vectors, vector k lane i = codes 4k..4k+3 + 128 (unsigned bytes);
//          Q4_0:      4 vectors, vector m lane i = stored bytes 4m..4m+3 (low nibbles:
//                     elements 4m.., high nibbles: elements 4m+16..);
//          IQ4_NL:    as Q4_0 (the grid indices);
//          Q5_0 / Q5_1: as Q4_0 (the codes' low 4 bits; Q5_0's codes + 16), then a
//                     fifth vector whose lane i has bit 8j + k set when bit 4 of
//                     row i's element 4k + j is;
//   scales [G, B, 16] f16 block scales (Q8_0, Q4_0, IQ4_NL, Q5_0; Q5_1: [G, B, 2, 16],
//          the 16 lanes' d, then their m; I8 keeps WeightMatrix::scales).
// The super-block formats (S = cols / 256 super-blocks) keep their integer scales:
//   codes  as Q4_0 (Q4_K: the codes 0..15 as nibbles; IQ4_XS: the grid indices; Q5_K: the codes' low 4
//          bits so, then a fifth vector as Q5_0's; Q6_K: the low 4 bits of codes
//          + 32 so, then two vectors whose lane i has bits 8j + 2q, + 1 of vector
//          c = 0, 1 set to bits 4, 5 of row i's element 4 (4c + q) + j + 32;
//          Q2_K: 2 vectors of bits 0, 1 of the codes so; Q3_K: of codes + 4,
//          then bit 2 as Q5_0's fifth vector);
//   scales [G, S, 320 bytes] (Q4_K, Q5_K): 16 lanes of f16 d, 16 of f16 dmin, then
//          [8 blocks, 16 lanes] 6-bit scales and [8, 16] 6-bit mins, a byte each;
//          [G, S, 288 bytes] (Q6_K): 16 lanes of f16 d, then [16 half blocks,
//          16 lanes] int8 scales;
//          [G, S, 160 bytes] (IQ4_XS): 16 lanes of f16 d, then [8 blocks, 16
//          lanes] int8 scales (the 6-bit ones less 32); (Q3_K) 16 lanes of f16
//          d, then [8 blocks, 16 lanes, 2 halves] int8 scales (the 6-bit ones
//          less 32); [G, S, 320 bytes] (Q2_K): 16 lanes of f16 d, 16 of f16
//          dmin, then [8 blocks, 16 lanes, 2 halves] scale | min << 4 (a
//          lane's two halves side by side: vpmaddwd's pair once widened).
// bf16 (C = ceil(cols / 2) column pairs): [G, C, 16 lanes of 4 bytes], lane i of
// vector c = row 16g + i's columns 2c, 2c + 1 as stored (a missing last column: 0).
// f16: groups in panels of 3 (kF16PanelGroups; the last panel holds the 1-3
// left), each [cols, m groups, 16 lanes of 2 bytes]: lane i of vector (k, j) of
// panel p = row 16 (3p + j) + i's column k (32 bytes: vcvtph2ps widens it to one
// 16-row vector of f32 weights), so a tile of a panel's rows reads one stream.
// The same bytes as the stored matrix when rows is a multiple of 16 (and
// cols even for bf16).
constexpr int64_t kPackRows = 16;
// Bytes of w packed; 0 when its format has no packed layout (f32).
int64_t packed_bytes(const WeightMatrix& w);
// Writes w packed into dst[packed_bytes(w)], 64-byte aligned.
void pack_matrix(const WeightMatrix& w, uint8_t* dst);

// Whether the AVX-512 kernels multiply packed bf16 weights with AVX512-BF16
// (vdpbf16ps): activations rounded to bf16 (relative error <= 2^-9 each, as
// llama.cpp does), instead of widened weights times f32 activations.
bool bf16_dot_supported();

// Whether the AVX-512 kernels hand tiles of 16 tokens of packed matrices of
// the formats with one integer dot per block of 32 (Q8_0, I8, Q4_0, Q5_0,
// Q5_1, IQ4_NL, Q4_K, Q5_K, IQ4_XS) to the AMX tiles (AMX-INT8, Sapphire
// Rapids on; Linux grants the tile state on the first call). They compute
// the same integer dots and the same float steps per output as the VNNI
// kernels: the same bits, batch-invariant. ZEROLAYER_AMX=0 keeps to VNNI.
bool amx_int8_supported();

// Whether packed bf16 matrices whose in_features are a multiple of 32 go to
// the AMX-BF16 tiles (tdpbf16ps) at every batch size, decode included: the
// bf16 activations of bf16_dot_supported, f32 sums in another order than
// vdpbf16ps' (so other bits, batch-invariant all the same).
// ZEROLAYER_AMX=0 keeps to vdpbf16ps.
bool amx_bf16_supported();

enum class Isa { kScalar, kAvx2, kAvx512 };
const char* isa_name(Isa isa);
// The best the CPU supports, or ZEROLAYER_ISA when set (and supported).
Isa active_isa();
bool isa_supported(Isa isa);

// One product sharing the call's input: y = x · wᵀ + bias, y: [num_tokens, w.rows].
struct MatmulTarget {
  const WeightMatrix* w = nullptr;
  const float* bias = nullptr;  // [w.rows] or nullptr
  float* y = nullptr;
};

// x: [num_tokens, in]; every target has w.cols == in. Several targets (q/k/v,
// gate/up) share one quantization of x and one parallel section.
void matmul(ThreadPool& pool, const float* x, int64_t num_tokens, std::span<const MatmulTarget> targets,
            Isa isa = active_isa());
void matmul(ThreadPool& pool, const float* x, const WeightMatrix& w, const float* bias, float* y,
            int64_t num_tokens, Isa isa = active_isa());

// One product of a grouped call: its own input and targets.
struct MatmulGroup {
  const float* x = nullptr;  // [num_tokens, in]
  int64_t num_tokens = 0;
  std::span<const MatmulTarget> targets;
};
// Independent products in one parallel section (the experts of a
// mixture-of-experts layer, each with the tokens routed to it): each group's
// weights are streamed once for all its tokens, and every result is what
// matmul() gives for that group alone (bit for bit).
void matmul_groups(ThreadPool& pool, std::span<const MatmulGroup> groups, Isa isa = active_isa());

// Dot product of two f32 vectors (run-time dispatch).
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace cpu
}  // namespace zl
