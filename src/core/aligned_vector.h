// std::vector whose data starts on a 64-byte cache line. Why: the matmul
// kernels write a group of 16 float outputs as one 64-byte vector, and in
// decode batches of 17-64 tokens they write them past the caches
// (non-temporal stores, streams_outputs in kernels/cpu/matmul_kernels.h),
// which needs every such vector to be one whole line: a large plain
// vector's data sits 16 bytes into a line (glibc's chunk header).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace zl {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const { return true; }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace zl
