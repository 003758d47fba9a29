// Helpers for the libFuzzer targets in this folder (see fuzz/README.md).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/tensor_index.h"

namespace zl::fuzz {

// The input as a file: the readers under test take paths (and map them), so
// the bytes go to an anonymous memory file named by /proc/self/fd/N.
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) : fd_(memfd_create("zl-fuzz", 0)) {
    size_t written = 0;
    while (fd_ >= 0 && written < size) {
      ssize_t n = write(fd_, data + written, size - written);
      if (n <= 0) break;
      written += size_t(n);
    }
  }
  ~InputFile() {
    if (fd_ >= 0) close(fd_);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

// Reads the first and last byte of every tensor: the readers promise that
// each lies inside the mapping, and a mapping read past the file's end
// faults, which the fuzzer reports.
inline uint32_t touch_tensors(const TensorIndex& index) {
  uint32_t sum = 0;
  for (const auto& [name, info] : index) {
    if (info.num_bytes == 0) continue;
    sum += info.data[0] + info.data[info.num_bytes - 1];
  }
  return sum;
}

}  // namespace zl::fuzz
