// remove_tree: deletes a file or a directory and everything under it, like
// std::filesystem::remove_all, without that function.
//
// Why not remove_all: PyTorch's CUDA wheels (LibTorch 2.11) export their own copy of libstdc++'s
// std::filesystem::remove_all, which the dynamic linker binds ahead of the system libstdc++'s in
// every process that links LibTorch. Under GCC 13 that copy calls through a null pointer: every
// real run on the H100 machine ended in a segfault when it cleaned up its temporary directory.
#pragma once

#include <string>

namespace overlapsim {

// Removes `path` (a file, or a directory tree; symbolic links are removed, never followed).
// Returns false if something could not be removed; a missing path is not an error.
bool remove_tree(const std::string& path) noexcept;

} // namespace overlapsim
