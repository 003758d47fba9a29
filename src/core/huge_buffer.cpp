#include "core/huge_buffer.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <thread>
#include <vector>

namespace zl {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

void HugeBufferDeleter::operator()(void* p) const { munmap(p, bytes); }

HugeBuffer allocate_huge_buffer(size_t bytes) {
  if (bytes == 0) bytes = 1;
  // Over-map by one huge page so that an aligned start exists, then unmap
  // the unaligned head and tail.
  const size_t mapped = bytes + kHugePage;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return HugeBuffer(nullptr, HugeBufferDeleter{});
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (begin + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > begin) munmap(raw, aligned - begin);
  const uintptr_t tail = aligned + bytes;
  const uintptr_t end = begin + mapped;
  if (end > tail) munmap(reinterpret_cast<void*>(tail), end - tail);
  void* p = reinterpret_cast<void*>(aligned);
  advise_huge_pages(p, bytes);
  return HugeBuffer(p, HugeBufferDeleter{bytes});
}

namespace {

int populate_range(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  if (madvise(p, bytes, MADV_POPULATE_WRITE) == 0) return 0;
  if (errno != EINVAL) return errno;
#endif
  // The buffer is zero-filled: writing 0 commits a page without changing it.
  auto* bytes_p = static_cast<volatile char*>(p);
  for (size_t i = 0; i < bytes; i += 4096) bytes_p[i] = 0;
  return 0;
}

}  // namespace

int populate_huge_buffer(void* p, size_t bytes, int num_threads) {
  // Whole 2 MiB pages per thread, so that no page is faulted by two threads.
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t pages = (bytes + kHugePage - 1) / kHugePage;
  const size_t threads = std::clamp<size_t>(static_cast<size_t>(std::max(num_threads, 1)), 1, std::max<size_t>(pages, 1));
  if (threads == 1) return populate_range(p, bytes);
  std::vector<int> errors(threads, 0);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) {
    const size_t begin = pages * t / threads * kHugePage, end = std::min(bytes, pages * (t + 1) / threads * kHugePage);
    if (end > begin)
      workers.emplace_back([&errors, t, start = static_cast<char*>(p) + begin, n = end - begin] {
        errors[t] = populate_range(start, n);
      });
  }
  for (std::thread& w : workers) w.join();
  for (int e : errors)
    if (e != 0) return e;
  return 0;
}

void advise_huge_pages(void* p, size_t bytes) {
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // 4 KiB pages if refused
}

}  // namespace zl
