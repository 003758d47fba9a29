// A read-only memory map of a whole file. Model weights are read through it so
// that loading never copies what it can use in place. The bytes are untrusted:
// parsers must check every offset and length against size() before reading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "zerolayer/status.h"

namespace zl {

class MappedFile {
 public:
  static StatusOr<std::shared_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  bool contains(const void* p) const {
    return p >= static_cast<const void*>(data_) && p < static_cast<const void*>(data_ + size_);
  }
  // Drops the whole pages inside [p, p + n) from this process's memory
  // (MADV_DONTNEED) when the range lies in the map; the bytes stay readable,
  // a later read faults them in again from the file.
  void release_pages(const void* p, size_t n) const;

 private:
  MappedFile(std::string path, const uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Reads a whole (small) text file, e.g. config.json.
StatusOr<std::string> read_file(const std::string& path);

bool file_exists(const std::string& path);
bool is_directory(const std::string& path);

}  // namespace zl
