#include "validate/host_allocator.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <string>
#include <sys/resource.h>
#include <sys/types.h>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define OVERLAPSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OVERLAPSIM_ASAN 1
#endif
#endif

namespace overlapsim::real {
namespace {

// A stand-in for jemalloc's mallctl: answers `arenas.narenas`, records every time it is given,
// and fails the names listed in `errors` with their errno.
struct FakeMallctl {
  unsigned arenas = 3;
  std::vector<std::pair<std::string, int>> errors;
  std::vector<std::pair<std::string, ssize_t>> set;

  Mallctl function() {
    return
        [this](const char* name, void* old, std::size_t* old_size, void* value, std::size_t size) {
          for (const auto& [failing, error] : errors)
            if (failing == name)
              return error;
          if (std::string(name) == "arenas.narenas") {
            std::memcpy(old, &arenas, sizeof(arenas));
            *old_size = sizeof(arenas);
            return 0;
          }
          EXPECT_EQ(size, sizeof(ssize_t)) << name;
          set.emplace_back(name, *static_cast<ssize_t*>(value));
          return 0;
        };
  }
};

TEST(HostAllocator, NeverPurgeSetsTheDefaultThenEveryArenaThatExists) {
  FakeMallctl jemalloc;
  jemalloc.errors = {{"arena.1.dirty_decay_ms", EFAULT}, {"arena.1.muzzy_decay_ms", EFAULT}};
  ASSERT_TRUE(never_purge(jemalloc.function()));
  const std::vector<std::pair<std::string, ssize_t>> expected = {
      {"arenas.dirty_decay_ms", -1},  {"arenas.muzzy_decay_ms", -1},
      {"arena.0.dirty_decay_ms", -1}, {"arena.0.muzzy_decay_ms", -1},
      {"arena.2.dirty_decay_ms", -1}, {"arena.2.muzzy_decay_ms", -1}};
  EXPECT_EQ(jemalloc.set, expected); // arena 1, not created yet, takes the default
}

TEST(HostAllocator, NeverPurgeFailsOnAnyOtherRefusal) {
  FakeMallctl no_default;
  no_default.errors = {{"arenas.dirty_decay_ms", ENOENT}};
  EXPECT_FALSE(never_purge(no_default.function()));
  FakeMallctl refused;
  refused.errors = {{"arena.2.muzzy_decay_ms", EINVAL}};
  EXPECT_FALSE(never_purge(refused.function()));
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Writes every page of a fresh 8 MiB block and frees it; returns the page faults that took.
long faults_to_fill_a_block() {
  constexpr std::size_t kBytes = std::size_t{8} << 20;
  const long before = minor_faults();
  auto* block = static_cast<volatile char*>(std::malloc(kBytes));
  for (std::size_t i = 0; i < kBytes; i += 4096)
    block[i] = 1;
  const long after = minor_faults();
  std::free(const_cast<char*>(block));
  return after - before;
}

// The test binary runs on glibc's malloc: once set up, a freed 8 MiB block is there for the next
// one (2048 pages, which glibc's defaults unmap and fault in again).
TEST(HostAllocator, GlibcServesTheNextBlockFromMemoryAlreadyMapped) {
#if defined(OVERLAPSIM_ASAN)
  GTEST_SKIP() << "AddressSanitizer's allocator takes no mallopt";
#else
  if (dlsym(RTLD_DEFAULT, "mallctl") != nullptr)
    GTEST_SKIP() << "this process's malloc is jemalloc's";
  EXPECT_STREQ(keep_freed_host_memory(), "glibc");
  faults_to_fill_a_block(); // the heap grows to hold it
  EXPECT_LT(faults_to_fill_a_block(), 64);
#endif
}

} // namespace
} // namespace overlapsim::real
