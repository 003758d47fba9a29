// Large anonymous buffers on 2 MiB pages where the kernel allows it
// (transparent huge pages in "madvise" or "always" mode), else 4 KiB pages.
// Why: a decode step streams the whole KV pool; on 4 KiB pages that walks
// tens of thousands of pages, which evicts every TLB entry (in a virtual
// machine each miss is a two-level page walk), and the engine's per-sequence
// state then misses the TLB after every forward pass.
#pragma once

#include <cstddef>
#include <memory>

namespace zl {

struct HugeBufferDeleter {
  size_t bytes = 0;
  void operator()(void* p) const;
};
using HugeBuffer = std::unique_ptr<void, HugeBufferDeleter>;

// Zero-filled, 2 MiB aligned; nullptr if the memory cannot be mapped.
HugeBuffer allocate_huge_buffer(size_t bytes);

// Backs every page of [p, p + bytes) with memory now (MADV_POPULATE_WRITE,
// or a write of 0 to each 4 KiB page on kernels before 5.14), so that later
// first touches neither stall nor fail, on num_threads threads (the kernel's
// zeroing of fresh pages is most of the time, and it runs on every core).
// Returns 0, or the errno (ENOMEM).
int populate_huge_buffer(void* p, size_t bytes, int num_threads = 1);

// Asks for 2 MiB pages for the whole pages inside [p, p + bytes) of memory
// not yet touched (advisory, as above; only aligned 2 MiB stretches can get one).
void advise_huge_pages(void* p, size_t bytes);

}  // namespace zl
