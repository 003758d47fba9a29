// The tensors of a model file, as located and validated by a format reader
// (safetensors, GGUF): name -> dtype, shape and the bytes inside a mapped file.
// Readers guarantee, for every entry: the dtype is known, the shape's element
// count times the dtype size (overflow-checked) equals the byte size, and
// [data, data + num_bytes) lies inside `file` and overlaps no other tensor.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace zl {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  // Row-major, outermost first, as PyTorch/safetensors write it: a Linear
  // weight is [out_features, in_features]. (GGUF's ne[] is reversed into this.)
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t num_bytes = 0;
  std::shared_ptr<MappedFile> file;  // keeps `data` mapped

  int64_t num_elements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

using TensorIndex = std::map<std::string, TensorInfo>;

std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace zl
