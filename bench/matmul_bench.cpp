// Kernel-level matmul speed per weight format, ISA and token count, as JSON
// lines: GB/s of weights streamed and GFLOP/s. The sweep the forward-pass
// numbers of decode_bench are explained by.
// Usage: matmul_bench [--rows 8192] [--cols 2048] [--tokens 1,8,64,512] [--threads 2] [--runs 5]
//                     [--copies 1] [--formats f32,bf16,f16,int8,q8_0,q4_0]
// --formats also takes q5_0, q5_1, q4_k, q6_k (quantized here) and q5_k,
// q3_k, q2_k, iq4_nl, iq4_xs (random blocks: formats read from GGUF only).
// A matrix that fits the last-level cache (260 MiB on the Xeon VM) is read
// from there by every run after the first, where a decode step streams its
// weights from memory; --copies N makes N copies of each layout and runs them
// in turn, so that N x the matrix's bytes beyond that cache puts the runs on
// memory as a model's step is.
#include <CLI/CLI.hpp>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>

#include "bandwidth_probe.h"
#include "core/aligned_vector.h"
#include "kernels/cpu/matmul.h"
#include "model/weights.h"

namespace {

// m and copies - 1 copies of the bytes its kernels read: the packed layout
// where it has one (the stored rows then go unread and are shared), else
// the stored rows; I8's row scales either way.
std::vector<zl::WeightMatrix> copy_matrix(const zl::WeightMatrix& m, int copies, zl::ModelWeights& storage) {
  std::vector<zl::WeightMatrix> out = {m};
  auto copy = [&](const void* src, int64_t bytes) {
    uint8_t* dst = storage.allocate_bytes(bytes);
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return dst;
  };
  for (int c = 1; c < copies; ++c) {
    zl::WeightMatrix w = m;
    if (m.packed != nullptr) {
      w.packed = copy(m.packed, zl::cpu::packed_bytes(m));
    } else {
      w.data = copy(m.data, m.rows * m.row_bytes());
    }
    if (m.scales != nullptr) w.scales = reinterpret_cast<const float*>(copy(m.scales, m.rows * 4));
    out.push_back(w);
  }
  return out;
}

// The formats read from GGUF only (no quantizer here) by name, as
// dtype_name spells them in lower case.
std::optional<zl::DType> gguf_only_format(const std::string& name) {
  for (zl::DType d : {zl::DType::kQ5_K, zl::DType::kQ3_K, zl::DType::kQ2_K, zl::DType::kIQ4_NL, zl::DType::kIQ4_XS}) {
    std::string lower = zl::dtype_name(d);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == lower) return d;
  }
  return std::nullopt;
}

// The matrix of format `name`: wf [rows, cols] converted through the
// loader's own path (a quantization: int8, q8_0, q4_0, q5_0, ...; or a
// float dtype), or random blocks of a format read from GGUF only.
zl::StatusOr<zl::WeightMatrix> bench_matrix(const std::string& name, const float* wf, int64_t rows, int64_t cols,
                                            zl::ModelWeights& storage) {
  if (std::optional<zl::DType> d = gguf_only_format(name)) {
    if (cols % zl::dtype_block_elems(*d) != 0)
      return zl::invalid_argument("--cols ", cols, ": ", name, " needs a multiple of ", zl::dtype_block_elems(*d));
    zl::WeightMatrix w;
    w.dtype = *d;
    w.rows = rows;
    w.cols = cols;
    uint8_t* data = storage.allocate_bytes(rows * w.row_bytes());
    for (int64_t r = 0; r < rows; ++r) zl::random_gguf_blocks(*d, static_cast<uint32_t>(r), data + r * w.row_bytes(), cols);
    w.data = data;
    return w;
  }
  zl::WeightFormat f;
  zl::Status s = zl::parse_quantization_flag(name, f);
  if (!s.ok()) s = zl::parse_dtype_flag(name, f);
  if (!s.ok()) return s;
  zl::TensorInfo info;
  info.name = "w";
  info.shape = {rows, cols};
  info.data = reinterpret_cast<const uint8_t*>(wf);
  info.num_bytes = static_cast<uint64_t>(rows * cols * 4);
  return zl::convert_matrix(info, f, storage);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rows = 8192, cols = 2048;
  std::vector<int> tokens = {1, 8, 64, 512};
  std::vector<std::string> formats = {"f32", "bf16", "f16", "int8", "q8_0", "q4_0"};
  int threads = zl::default_num_threads(), runs = 5, copies = 1;
  CLI::App app{"matmul kernel sweep"};
  app.add_option("--rows", rows, "rows of the weight matrix")->check(CLI::PositiveNumber);
  app.add_option("--cols", cols, "columns (the input width)")->check(CLI::PositiveNumber);
  app.add_option("--tokens", tokens, "token counts to time, each a matmul of that many input rows")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--formats", formats,
                 "weight formats: f32, bf16, f16, int8, q8_0, q4_0, q5_0, q5_1, q4_k, q6_k (quantized here); "
                 "q5_k, q3_k, q2_k, iq4_nl, iq4_xs (random blocks)")
      ->delimiter(',');
  app.add_option("--threads", threads, "threads, the caller's included")->check(CLI::PositiveNumber);
  app.add_option("--runs", runs, "timed runs per token count, after one warm-up")->check(CLI::PositiveNumber);
  app.add_option("--copies", copies, "copies of each matrix, run in turn")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  // One f32 matrix, converted per format through the loader's own path.
  zl::ModelWeights storage;
  float* wf = storage.allocate(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) wf[i] = u(rng);
  zl::ThreadPool pool(threads);
  const int max_tokens = *std::max_element(tokens.begin(), tokens.end());
  std::vector<float> x(static_cast<size_t>(max_tokens * cols));
  zl::AlignedVector<float> y(static_cast<size_t>(max_tokens * rows));  // as the model's outputs
  for (float& v : x) v = u(rng);
  for (const std::string& name : formats) {
    auto w = bench_matrix(name, wf, rows, cols, storage);
    if (!w.ok()) {
      std::fprintf(stderr, "--formats %s: %s\n", name.c_str(), w.status().to_string().c_str());
      return 1;
    }
    // Quantized formats run as stored and, on AVX-512, packed as the loader packs them.
    std::vector<zl::WeightMatrix> layouts = {*w};
    if (zl::cpu::active_isa() == zl::cpu::Isa::kAvx512 && zl::cpu::packed_bytes(*w) > 0) {
      layouts.push_back(*w);
      layouts.back().packed = storage.allocate_bytes(zl::cpu::packed_bytes(*w));
      zl::cpu::pack_matrix(*w, const_cast<uint8_t*>(layouts.back().packed));
    }
    for (const zl::WeightMatrix& m : layouts) {
      const std::vector<zl::WeightMatrix> copied = copy_matrix(m, copies, storage);
      for (int t : tokens) {
        std::vector<double> secs;
        for (int r = 0; r <= runs * copies; ++r) {
          const zl::WeightMatrix& c = copied[static_cast<size_t>(r % copies)];
          auto start = std::chrono::steady_clock::now();
          zl::cpu::matmul(pool, x.data(), c, nullptr, y.data(), t);
          double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (r > 0) secs.push_back(sec);
        }
        auto sm = zl::bench::summarize(secs);
        std::printf("{\"format\":\"%s\",\"layout\":\"%s\",\"isa\":\"%s\",\"rows\":%lld,\"cols\":%lld,"
                    "\"tokens\":%d,\"ms_min\":%.3f,\"ms_median\":%.3f,\"weight_gbs\":%.2f,\"gflops\":%.1f}\n",
                    name.c_str(), m.packed != nullptr ? "packed" : "stored", zl::cpu::isa_name(zl::cpu::active_isa()),
                    (long long)rows, (long long)cols, t, sm.min * 1e3, sm.median * 1e3, m.num_bytes() / sm.min / 1e9,
                    2.0 * rows * cols * t / sm.min / 1e9);
      }
    }
  }
  return 0;
}
