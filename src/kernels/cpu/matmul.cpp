#include "kernels/cpu/matmul.h"

#include <cpuid.h>

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

// Quantized activations, reused across calls (sized for the largest seen).
struct ActScratch {
  std::vector<int8_t> q;
  std::vector<float> d, ds;
  std::vector<int32_t> sum16;  // Q6_K, Q2_K only
};

// Rows per cache block: the weight rows one token sweep re-reads, ~1 MiB, as
// much as this VM's L2 per core (Zen 4: 1 MiB); halving it to 512 KiB made no
// measurable difference to a bf16 prefill here.
int64_t rows_per_block(const WeightMatrix& w, int64_t num_tokens) {
  if (num_tokens <= 4) return w.rows;  // one token tile: nothing is re-read
  int64_t rows = (int64_t{1} << 20) / std::max<int64_t>(1, w.row_bytes());
  return std::max<int64_t>(16, rows / 16 * 16);
}

}  // namespace

void matmul(ThreadPool& pool, const float* x, int64_t num_tokens, std::span<const MatmulTarget> targets,
            Isa isa) {
  if (targets.empty() || num_tokens <= 0) return;
  const int64_t cols = targets[0].w->cols;
  MatmulInput in;
  in.x = x;
  in.num_tokens = num_tokens;
  in.cols = cols;
  int64_t total_rows = 0;
  bool any_quantized = false, any_packed_bf16 = false, any_half_sums = false;
  for (const MatmulTarget& t : targets) {
    CHECK(t.w->cols == cols) << "matmul targets must share the input width";
    total_rows += t.w->rows;
    any_quantized |= dtype_is_quantized(t.w->dtype);
    any_half_sums |= dtype_needs_half_sums(t.w->dtype);
    any_packed_bf16 |= t.w->dtype == DType::kBF16 && t.w->packed != nullptr;
  }
  if (any_quantized) {
    CHECK(cols % 32 == 0) << "quantized weights need in_features divisible by 32";
    thread_local ActScratch scratch;
    size_t n = static_cast<size_t>(num_tokens * cols);
    if (scratch.q.size() < n) {
      scratch.q.resize(n);
      scratch.d.resize(n / 32);
      scratch.ds.resize(n / 32);
    }
    quantize_activations(x, num_tokens, cols, scratch.q.data(), scratch.d.data(), scratch.ds.data());
    in.xq = scratch.q.data();
    in.xd = scratch.d.data();
    in.xds = scratch.ds.data();
    if (any_half_sums) {
      if (scratch.sum16.size() < n / 16) scratch.sum16.resize(n / 16);
      half_block_sums(scratch.q.data(), num_tokens, cols, scratch.sum16.data());
      in.xsum16 = scratch.sum16.data();
    }
  }

  // Packed bf16 on AVX512-BF16 multiplies bf16 activations: converted here once
  // per call, not per tile and row block, where re-reading x (4 MiB for 512
  // tokens of 2048, past L2) from L3 cost ~7% of a bf16 prefill.
  if (isa == Isa::kAvx512 && bf16_dot_supported() && any_packed_bf16) {
    const int64_t pairs = (cols + 1) / 2;
    thread_local std::vector<uint32_t> xbf16;
    if (xbf16.size() < static_cast<size_t>(num_tokens * pairs)) xbf16.resize(static_cast<size_t>(num_tokens * pairs));
    uint32_t* xp = xbf16.data();
    auto convert = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) to_bf16_pairs_avx512(x + t * cols, cols, xp + t * pairs);
    };
    if (num_tokens * cols < (1 << 16)) {
      convert(0, num_tokens);
    } else {
      pool.parallel_for(num_tokens, convert);
    }
    in.xbf16 = xp;
  }

  // Rows [begin, end) of the targets laid end to end.
  auto run_rows = [&](int64_t begin, int64_t end) {
    int64_t offset = 0;
    for (const MatmulTarget& t : targets) {
      const WeightMatrix& w = *t.w;
      int64_t lo = std::max(begin, offset) - offset, hi = std::min(end, offset + w.rows) - offset;
      offset += w.rows;
      if (lo >= hi) continue;
      TileKernel kernel = tile_kernel(isa, w.dtype);
      const int64_t step = rows_per_block(w, num_tokens);
      for (int64_t r = lo; r < hi; r += step) kernel(w, in, r, std::min(hi, r + step), t.y, w.rows);
      if (t.bias != nullptr)
        for (int64_t tok = 0; tok < num_tokens; ++tok)
          for (int64_t r = lo; r < hi; ++r) t.y[tok * w.rows + r] += t.bias[r];
    }
  };
  // Below ~64K multiply-adds waking the workers costs more than it saves.
  if (num_tokens * cols * total_rows < (1 << 16)) return run_rows(0, total_rows);
  // Parts of whole 16-row groups (the packed layout's, and the kernels' tiles),
  // several per thread, so that a thread slowed by other work on its core
  // hands the rest of its share to the others (each row's result does not
  // depend on which thread computes it): four in decode, where each part is
  // one stream of weights from memory; sixteen past one token tile, where a
  // part computes for milliseconds (a 512-token prefill's gate / up: ~5 ms
  // each on this VM's cores instead of ~20) and the other thread waits at
  // the end for whichever part a descheduled thread holds.
  pool.parallel_for(total_rows, run_rows, 16, num_tokens > 4 ? 16 : 4);
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
