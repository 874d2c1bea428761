#include "validate/host_allocator.h"

#include <dlfcn.h>
#include <malloc.h>
#include <sys/types.h>

#include <cerrno>
#include <string>

namespace overlapsim::real {

bool never_purge(const Mallctl& mallctl) {
  ssize_t never = -1;
  for (const char* name : {"arenas.dirty_decay_ms", "arenas.muzzy_decay_ms"})
    if (mallctl(name, nullptr, nullptr, &never, sizeof(never)) != 0)
      return false;
  unsigned arenas = 0;
  std::size_t size = sizeof(arenas);
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0)
    return false;
  for (unsigned i = 0; i < arenas; ++i)
    for (const char* decay : {"dirty_decay_ms", "muzzy_decay_ms"}) {
      const std::string name = "arena." + std::to_string(i) + "." + decay;
      const int error = mallctl(name.c_str(), nullptr, nullptr, &never, sizeof(never));
      if (error != 0 && error != EFAULT)
        return false;
    }
  return true;
}

const char* keep_freed_host_memory() {
  // jemalloc's entry point where this process's malloc is jemalloc's (the executables link it
  // when present, cmake/Dependencies.cmake): looked up rather than linked, so that a process on
  // glibc's malloc (the tests, a build without jemalloc) takes glibc's path.
  using MallctlFn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  if (const auto mallctl = reinterpret_cast<MallctlFn>(dlsym(RTLD_DEFAULT, "mallctl")))
    if (never_purge(mallctl))
      return "jemalloc";
  // glibc: blocks below the mmap threshold come from a heap, whose free top stays mapped below
  // the trim threshold. 32 MiB is glibc's largest dynamic threshold on 64 bits; a block above it
  // is mapped for itself, as glibc would anyway.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return "glibc";
}

} // namespace overlapsim::real
