#include "scenario/user_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace overlapsim::scenario {

namespace {

const char* type_of(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO (named pipe)";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

std::string mib(std::uintmax_t bytes) {
  return fmt::format("{} MiB", bytes >> 20);
}

} // namespace

void check_user_file(const std::string& path, const UserFileKind& kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw std::runtime_error(
        fmt::format("{}: cannot open the {}: {}", path, kind.what, std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(fmt::format("{}: is {}; expected a {} (a regular file)", path,
                                         type_of(st.st_mode), kind.what));
  if (static_cast<std::uintmax_t>(st.st_size) > kind.max_bytes)
    throw std::runtime_error(fmt::format("{}: {} bytes; a {} may hold at most {}", path, st.st_size,
                                         kind.what, mib(kind.max_bytes)));
}

std::string read_user_file(const std::string& path, const UserFileKind& kind) {
  check_user_file(path, kind);
  // O_NONBLOCK: had the path become a FIFO since the check, opening it does not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw std::runtime_error(
        fmt::format("{}: cannot open the {}: {}", path, kind.what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: expected a {} (a regular file)", path, kind.what));
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(
          fmt::format("{}: cannot read the {}: {}", path, kind.what, std::strerror(err)));
    }
    if (n == 0)
      break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kind.max_bytes) { // it grew while being read
      ::close(fd);
      throw std::runtime_error(
          fmt::format("{}: a {} may hold at most {}", path, kind.what, mib(kind.max_bytes)));
    }
  }
  ::close(fd);
  return text;
}

} // namespace overlapsim::scenario
