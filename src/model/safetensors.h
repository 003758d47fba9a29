// Reader for Hugging Face safetensors files: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then the data.
// Every byte is untrusted: the header length, offsets, shapes and sizes are
// checked (overflow-safe) so that each returned TensorInfo satisfies the
// TensorIndex contract (known dtype, bytes == elements x dtype size, inside the
// file, no overlaps). Tensors point into a shared read-only mmap of the file.
#pragma once

#include <string>

#include "model/tensor_index.h"
#include "zerolayer/status.h"

namespace zl {

// One .safetensors file. Dtypes F32, F16, BF16; others are unimplemented.
StatusOr<TensorIndex> read_safetensors(const std::string& path);

// A model directory: model.safetensors.index.json (sharded; its weight_map
// names the shard of each tensor) if present, else model.safetensors.
// Shard names must be plain file names inside `dir`. A tensor name appearing
// in two shards is an error. Tensors a shard holds beyond the weight_map are
// included too.
StatusOr<TensorIndex> read_safetensors_model(const std::string& dir);

}  // namespace zl
