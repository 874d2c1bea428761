#include "sim/child_process.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace overlapsim::sim {

namespace {

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(3);
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

} // namespace

ChildProcess::ChildProcess(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("cannot fork: {}", std::strerror(errno)));
  }
  if (pid_ == 0) {
    // The child dies with its parent: a killed `overlapsim run` leaves no simulation running.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
      _exit(4); // the parent died before the request took effect
    ::close(fds[0]);
    std::string reply(1, '0'); // status byte, then the body's bytes or its error message
    try {
      reply += body();
    } catch (const std::exception& e) {
      reply.assign(1, '1');
      reply += e.what();
    }
    write_all(fds[1], reply);
    ::close(fds[1]);
    _exit(0); // no atexit handlers or static destructors: they belong to the parent
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_), fd_(other.fd_) {
  other.pid_ = -1;
  other.fd_ = -1;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::close(fd_);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string ChildProcess::collect() {
  std::string reply;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  fd_ = -1;
  if (!reply.empty() && reply[0] == '1')
    throw std::runtime_error(reply.substr(1));
  if (reply.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(
        WIFSIGNALED(status)
            ? fmt::format("the process died of signal {} ({})", WTERMSIG(status),
                          ::strsignal(WTERMSIG(status)))
            : fmt::format("the process ended with exit status {}", WEXITSTATUS(status)));
  return reply.substr(1);
}

} // namespace overlapsim::sim
