#include "files/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace overlapsim {

void write_file_atomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path())
    fs::create_directories(target.parent_path());
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error(fmt::format("{}: cannot write: {}", tmp, std::strerror(errno)));
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw std::runtime_error(fmt::format("{}: write failed: {}", tmp, std::strerror(errno)));
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored; // the rename's error is the one to report
    fs::remove(tmp, ignored);
    throw std::runtime_error(fmt::format("{}: cannot rename into place: {}", path, ec.message()));
  }
}

} // namespace overlapsim
