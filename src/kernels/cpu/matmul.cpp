#include "kernels/cpu/matmul.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "kernels/cpu/clones.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/quantize.h"

namespace zl {

const float* WeightMatrix::f32() const {
  CHECK(dtype == DType::kF32) << "weight matrix is " << dtype_name(dtype) << ", not F32";
  return static_cast<const float*>(data);
}

void WeightMatrix::row_to_f32(int64_t r, float* dst) const {
  dtype_to_f32(dtype, row(r), dst, cols);
  if (dtype == DType::kI8)
    for (int64_t i = 0; i < cols; ++i) dst[i] *= scales[r];
}

namespace cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "?";
}

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know "f16c".
bool f16c_supported() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// Asked once per ISA: tile_kernel asks per call, and CPUID traps to the
// hypervisor in a VM (it cost ~29% of a Q2_K decode step there).
bool isa_supported(Isa isa) {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c_supported();
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
                             f16c_supported() && __builtin_cpu_supports("fma");
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvx512: return avx512;
  }
  return false;
}

namespace {

// CPUID.(7,0):EDX bits 22 AMX-BF16, 24 AMX-TILE, 25 AMX-INT8.
constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24, kAmxInt8 = 1u << 25;

// The tile state, granted once per process: Linux must allow it
// (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) before the first tile instruction.
bool amx_granted() {
  static const bool granted = [] {
    if (!isa_supported(Isa::kAvx512)) return false;
    const char* env = std::getenv("ZEROLAYER_AMX");
    if (env != nullptr && std::string_view(env) == "0") return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || (edx & kAmxTile) == 0) return false;
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
}

bool cpu_has(unsigned edx_bits) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (edx & edx_bits) == edx_bits;
}

}  // namespace

__attribute__((target("amx-tile"))) void amx_load_config(const AmxTileConfig& cfg) {
  // GCC does not count ldtilecfg as reading cfg and may drop the stores that
  // filled it (it did when the int8 kernel's rows were an argument): the asm
  // says the memory is read.
  asm volatile("" : : "m"(cfg));
  _tile_loadconfig(&cfg);
}

bool amx_int8_supported() {
  static const bool supported = amx_granted() && cpu_has(kAmxInt8);
  return supported;
}

bool amx_bf16_supported() {
  static const bool supported = amx_granted() && bf16_dot_supported() && cpu_has(kAmxBf16);
  return supported;
}

bool bf16_dot_supported() {
  static const bool supported = isa_supported(Isa::kAvx512) && __builtin_cpu_supports("avx512bf16");
  return supported;
}

Isa active_isa() {
  static const Isa isa = [] {
    const char* env = std::getenv("ZEROLAYER_ISA");
    std::string_view want = env != nullptr ? env : "";
    for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
      if (want == isa_name(i) && isa_supported(i)) return i;
    if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
    if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
    return Isa::kScalar;
  }();
  return isa;
}

TileKernel tile_kernel(Isa isa, DType dtype) {
  switch (isa) {
    case Isa::kAvx512: return tile_kernel_avx512(dtype);
    case Isa::kAvx2: return tile_kernel_avx2(dtype);
    case Isa::kScalar: break;
  }
  return tile_kernel_scalar(dtype);
}

namespace {

// Row blocks and the threads' parts are whole pairs of 16-row groups: the
// AVX-512 tiles of 17 tokens or more take two groups at a time, and a
// block of an odd number of groups ran its last one alone at a lower rate
// (dummy:llama-1b's 2048 x 8192 q8_0 matrix came in blocks of 7 groups: a
// quarter of its groups alone).
constexpr int64_t kPartRows = 32;

// Quantized activations, reused across calls (sized for the largest seen).
struct ActScratch {
  std::vector<int8_t> q;
  std::vector<float> d, ds, ds128;
  std::vector<int32_t> sum16;  // Q6_K, Q2_K only
  std::vector<float> tiles;    // MatmulInput::xtiles
};

// Rows per cache block: the weight rows one token sweep re-reads, ~1 MiB, as
// much as this VM's L2 per core (Zen 4: 1 MiB); halving it to 512 KiB made no
// measurable difference to a bf16 prefill here. Whole pairs of 16-row groups
// (kPartRows), as the kernels' tiles take two groups at a time.
int64_t rows_per_block(const WeightMatrix& w, int64_t num_tokens) {
  if (num_tokens <= 4) return w.rows;  // one token tile: nothing is re-read
  int64_t rows = (int64_t{1} << 20) / std::max<int64_t>(1, w.row_bytes());
  return std::max<int64_t>(kPartRows, rows / kPartRows * kPartRows);
}

}  // namespace

namespace {

// A group's input as its kernels read it, and where its rows start in the
// rows of all groups laid end to end.
struct PreparedGroup {
  MatmulInput in;
  std::span<const MatmulTarget> targets;
  int64_t first_row = 0;
};

struct GroupNeeds {
  bool quantized = false, half_sums = false, packed_bf16 = false;
};

GroupNeeds group_needs(const MatmulGroup& g) {
  GroupNeeds n;
  const int64_t cols = g.targets[0].w->cols;
  for (const MatmulTarget& t : g.targets) {
    CHECK(t.w->cols == cols) << "matmul targets must share the input width";
    n.quantized |= dtype_is_quantized(t.w->dtype);
    n.half_sums |= dtype_needs_half_sums(t.w->dtype);
    n.packed_bf16 |= t.w->dtype == DType::kBF16 && t.w->packed != nullptr;
  }
  if (n.quantized) CHECK(cols % 32 == 0) << "quantized weights need in_features divisible by 32";
  return n;
}

// Packed bf16 on AVX512-BF16 multiplies bf16 activations: converted here once
// per call, not per tile and row block, where re-reading x (4 MiB for 512
// tokens of 2048, past L2) from L3 cost ~7% of a bf16 prefill.
// Tile-major where bf16_amx_tiles (MatmulInput::xbf16).
void convert_to_bf16_pairs(ThreadPool& pool, const float* x, int64_t num_tokens, int64_t cols, uint32_t* xp) {
  const int64_t pairs = (cols + 1) / 2;
  const bool tiles = bf16_amx_tiles(cols);
  auto convert = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = tiles ? (t / kTileTokens * pairs + t % kTileTokens) * 16 : t * pairs;
      to_bf16_pairs_avx512(x + t * cols, cols, xp + row, tiles ? 16 * kTileTokens : 16);
    }
  };
  if (num_tokens * cols < (1 << 16)) return convert(0, num_tokens);
  pool.parallel_for(num_tokens, convert);
}

// Token rows of xq up to a multiple of kTileTokens (MatmulInput: whole AMX tiles).
int64_t padded_tokens(int64_t num_tokens) { return (num_tokens + kTileTokens - 1) / kTileTokens * kTileTokens; }

// Tokens [t0, t1)'s block scales (d, ds, ds128: MatmulInput's xd, xds,
// xds128) into MatmulInput::xtiles' layout.
void tile_scales(const float* d, const float* ds, const float* ds128, int64_t t0, int64_t t1, int64_t num_blocks,
                 float* tiles) {
  for (int64_t t = t0; t < t1; ++t) {
    float* out = tiles + t / kTileTokens * num_blocks * 3 * kTileTokens + t % kTileTokens;
    for (int64_t b = 0; b < num_blocks; ++b, out += 3 * kTileTokens) {
      out[0] = d[t * num_blocks + b];
      out[kTileTokens] = ds[t * num_blocks + b];
      out[2 * kTileTokens] = ds128[t * num_blocks + b];
    }
  }
}

// The activation quantizer of isa (the same bytes from each).
auto quantize_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return quantize_activations_avx512;
    case Isa::kAvx2: return quantize_activations_avx2;
    default: return quantize_activations;
  }
}

// Each group's input (quantized, or as bf16 pairs, where its formats want),
// in scratch reused across calls (sized for the largest seen).
void prepare_groups(ThreadPool& pool, std::span<const MatmulGroup> groups, Isa isa, std::vector<PreparedGroup>& out) {
  thread_local ActScratch scratch;
  thread_local std::vector<uint32_t> xbf16;
  thread_local std::vector<GroupNeeds> needs;
  const bool bf16_dot = isa == Isa::kAvx512 && bf16_dot_supported();
  const bool amx = isa == Isa::kAvx512 && amx_int8_supported();
  // The AMX-BF16 kernel loads whole 16-token tiles of xbf16.
  auto bf16_rows = [](int64_t num_tokens, int64_t cols) {
    return bf16_amx_tiles(cols) ? padded_tokens(num_tokens) : num_tokens;
  };
  needs.clear();
  size_t nq = 0, nbf16 = 0;
  for (const MatmulGroup& g : groups) {
    needs.push_back(group_needs(g));
    const int64_t cols = g.targets[0].w->cols;
    if (needs.back().quantized) nq += static_cast<size_t>(padded_tokens(g.num_tokens) * cols);
    if (bf16_dot && needs.back().packed_bf16) nbf16 += static_cast<size_t>(bf16_rows(g.num_tokens, cols) * ((cols + 1) / 2));
  }
  if (scratch.q.size() < nq) {
    scratch.q.resize(nq);
    scratch.d.resize(nq / 32);
    scratch.ds.resize(nq / 32);
    scratch.ds128.resize(nq / 32);
    scratch.sum16.resize(nq / 16);
  }
  if (amx && scratch.tiles.size() < nq / 32 * 3) scratch.tiles.resize(nq / 32 * 3);
  if (xbf16.size() < nbf16) xbf16.resize(nbf16);
  size_t q_at = 0, bf16_at = 0;
  int64_t first_row = 0;
  out.clear();
  for (size_t i = 0; i < groups.size(); ++i) {
    const MatmulGroup& g = groups[i];
    PreparedGroup p;
    p.in.x = g.x;
    p.in.num_tokens = g.num_tokens;
    p.in.cols = g.targets[0].w->cols;
    p.targets = g.targets;
    p.first_row = first_row;
    for (const MatmulTarget& t : g.targets) first_row += t.w->rows;
    if (needs[i].quantized) {
      int8_t* q = scratch.q.data() + q_at;
      float* d = scratch.d.data() + q_at / 32;
      float* ds = scratch.ds.data() + q_at / 32;
      float* ds128 = isa == Isa::kAvx512 ? scratch.ds128.data() + q_at / 32 : nullptr;
      int32_t* sum16 = needs[i].half_sums ? scratch.sum16.data() + q_at / 16 : nullptr;
      float* tiles = amx ? scratch.tiles.data() + q_at / 32 * 3 : nullptr;
      const int64_t cols = p.in.cols;
      // Token rows are quantized independently: split over the pool when
      // there are enough (with the scalar quantizer a serial 64-token
      // quantization was ~10% of a batched decode step, the other core
      // idle; the SIMD one's, quantize_simd.cpp, is not measured apart).
      auto quantize = [&](int64_t t0, int64_t t1) {
        quantize_for(isa)(g.x + t0 * cols, t1 - t0, cols, q + t0 * cols, d + t0 * cols / 32, ds + t0 * cols / 32);
        for (int64_t i = t0 * cols / 32; ds128 != nullptr && i < t1 * cols / 32; ++i) ds128[i] = 128.0f * ds[i];
        if (sum16 != nullptr) half_block_sums(q + t0 * cols, t1 - t0, cols, sum16 + t0 * cols / 16);
        if (tiles != nullptr) tile_scales(d, ds, ds128, t0, t1, cols / 32, tiles);  // AMX is AVX-512: ds128 is set
      };
      if (g.num_tokens * cols < (1 << 16)) {
        quantize(0, g.num_tokens);
      } else {
        pool.parallel_for(g.num_tokens, quantize);
      }
      p.in.xq = q;
      p.in.xd = d;
      p.in.xds = ds;
      p.in.xds128 = ds128;
      p.in.xsum16 = sum16;
      p.in.xtiles = tiles;
      q_at += static_cast<size_t>(padded_tokens(g.num_tokens) * cols);
    }
    if (bf16_dot && needs[i].packed_bf16) {
      convert_to_bf16_pairs(pool, g.x, g.num_tokens, p.in.cols, xbf16.data() + bf16_at);
      p.in.xbf16 = xbf16.data() + bf16_at;
      bf16_at += static_cast<size_t>(bf16_rows(g.num_tokens, p.in.cols) * ((p.in.cols + 1) / 2));
    }
    out.push_back(p);
  }
}

}  // namespace

void matmul_groups(ThreadPool& pool, std::span<const MatmulGroup> groups, Isa isa) {
  // Reused across calls; the workers reach them through these references (a
  // thread_local named inside the lambda would be the worker's own).
  thread_local std::vector<PreparedGroup> prepared_storage;
  thread_local std::vector<MatmulGroup> live_storage;
  std::vector<PreparedGroup>& prepared = prepared_storage;
  std::vector<MatmulGroup>& live = live_storage;
  live.clear();
  for (const MatmulGroup& g : groups)
    if (g.num_tokens > 0 && !g.targets.empty()) live.push_back(g);
  if (live.empty()) return;
  prepare_groups(pool, live, isa, prepared);
  int64_t total_rows = 0, macs = 0, max_tokens = 0;
  for (const PreparedGroup& p : prepared)
    for (const MatmulTarget& t : p.targets) {
      total_rows += t.w->rows;
      macs += p.in.num_tokens * p.in.cols * t.w->rows;
      max_tokens = std::max(max_tokens, p.in.num_tokens);
    }

  // Rows [begin, end) of the groups' targets laid end to end.
  auto run_rows = [&](int64_t begin, int64_t end) {
    for (const PreparedGroup& p : prepared) {
      int64_t offset = p.first_row;
      for (const MatmulTarget& t : p.targets) {
        const WeightMatrix& w = *t.w;
        int64_t lo = std::max(begin, offset) - offset, hi = std::min(end, offset + w.rows) - offset;
        offset += w.rows;
        if (lo >= hi) continue;
        TileKernel kernel = tile_kernel(isa, w.dtype);
        const int64_t step = rows_per_block(w, p.in.num_tokens);
        for (int64_t r = lo; r < hi; r += step) kernel(w, p.in, r, std::min(hi, r + step), t.y, w.rows);
        if (t.bias != nullptr)
          for (int64_t tok = 0; tok < p.in.num_tokens; ++tok)
            for (int64_t r = lo; r < hi; ++r) t.y[tok * w.rows + r] += t.bias[r];
      }
    }
  };
  // Below ~64K multiply-adds waking the workers costs more than it saves.
  if (macs < (1 << 16)) return run_rows(0, total_rows);
  // Parts of whole pairs of 16-row groups (kPartRows: the packed layout's
  // groups, and the kernels' tiles), several per thread, so that a thread
  // slowed by other work on its core hands the rest of its share to the
  // others (each row's result does not depend on which thread computes
  // it): four in decode, where each part is one stream of weights from
  // memory; sixteen past one token tile, where a part computes for
  // milliseconds (a 512-token prefill's gate / up: ~5 ms each on this VM's
  // cores instead of ~20) and the other thread waits at the end for
  // whichever part a descheduled thread holds.
  pool.parallel_for(total_rows, run_rows, kPartRows, max_tokens > 4 ? 16 : 4);
}

void matmul(ThreadPool& pool, const float* x, int64_t num_tokens, std::span<const MatmulTarget> targets,
            Isa isa) {
  const MatmulGroup group{x, num_tokens, targets};
  matmul_groups(pool, std::span<const MatmulGroup>(&group, 1), isa);
}

void matmul(ThreadPool& pool, const float* x, const WeightMatrix& w, const float* bias, float* y,
            int64_t num_tokens, Isa isa) {
  MatmulTarget target{&w, bias, y};
  matmul(pool, x, num_tokens, std::span<const MatmulTarget>(&target, 1), isa);
}

// 32 independent partial sums: GCC turns the inner loop into vector FMAs
// without -ffast-math (no reassociation across lanes is needed), and two
// vector accumulators at AVX-512 width hide the FMA latency.
ZL_CPU_CLONES
float dot_f32(const float* a, const float* b, int64_t n) {
  constexpr int kLanes = 32;
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int j = 0; j < width; ++j) acc[j] += acc[j + width];
  return acc[0] + tail;
}

}  // namespace cpu
}  // namespace zl
