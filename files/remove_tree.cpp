#include "files/remove_tree.h"

#include <cerrno>
#include <cstdio>
#include <ftw.h>
#include <sys/stat.h>

namespace overlapsim {

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return std::remove(path) == 0 || errno == ENOENT ? 0 : -1; // children first (FTW_DEPTH)
}
} // namespace

bool remove_tree(const std::string& path) noexcept {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT;
  return ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

} // namespace overlapsim
