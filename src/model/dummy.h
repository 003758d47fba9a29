// Synthetic models (`--model dummy:NAME`): real shapes, seeded random weights,
// and the built-in byte tokenizer, for tests and benchmarks without files (as
// vLLM's dummy load format). The same name and seed give the same weights on
// every machine: each element is a hash of (seed, tensor index, element index).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "zerolayer/status.h"

namespace zl {

// "tiny" (~1M parameters), "tiny-4k" and "tiny-16k" (tiny with a 4096- and
// a 16384-token context),
// "tiny-window" (tiny with three sliding-window
// layers of 40 positions and one full), "llama-110m" (stories110M's shape),
// "llama-1b" (Llama-3.2-1B's shape).
std::vector<std::string> dummy_model_names();
StatusOr<ModelConfig> dummy_config(std::string_view name);

// Weights uniform with standard deviation 1/sqrt(in_features) for matrices
// and 1 ± 0.1 for norm weights, generated in f32 and then converted as
// `format` asks (the f32 copies of converted matrices are freed).
StatusOr<ModelWeights> dummy_weights(const ModelConfig& config, uint64_t seed, const WeightFormat& format = {});

}  // namespace zl
