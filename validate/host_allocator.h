// What a worker's host allocator does with memory the worker frees: it keeps it.
//
// A GPU run's tensors come from PyTorch's CUDA caching allocator, which keeps the blocks a run
// freed for its next allocation: a step's buffers cost nothing to allocate after the first. On a
// CPU the host's malloc returns freed memory to the kernel (jemalloc purges it over its decay
// time, glibc unmaps large blocks and trims a heap's top), and the next buffer of that size
// faults its pages in again, zeroed by the kernel, on whichever thread first writes it: Gloo's
// event loop receiving into a collective's output, the compute thread writing activations. On a
// 2-core machine the faults (and the tasks they delay) fell unevenly on the two workers, one of
// them spending twice the other's CPU time on the same collectives.
#pragma once

#include <cstddef>
#include <functional>

namespace overlapsim::real {

// Makes this process's allocator keep freed memory mapped, as the CUDA caching allocator does:
// jemalloc (where it is this process's malloc) never purges; glibc serves blocks up to its
// largest mmap threshold from its heaps and never trims them. Returns which it set up
// ("jemalloc" or "glibc"). Call once, early in a worker, before its buffers are allocated.
const char* keep_freed_host_memory();

// jemalloc's mallctl(name, old, old_size, new, new_size): 0 or an errno value.
using Mallctl = std::function<int(const char*, void*, std::size_t*, void*, std::size_t)>;

// Sets decay times of -1 ms (never purge) through `mallctl`: the default of arenas created from
// now on (a thread's first allocation may create one), then each arena below `arenas.narenas`.
// jemalloc 5.3 refuses a time for every arena at once (MALLCTL_ARENAS_ALL) and for an arena not
// yet created (EFAULT): those take the default when they are. False on any other error.
bool never_purge(const Mallctl& mallctl);

} // namespace overlapsim::real
