#include "sim/child_process.h"

#include "files/interruption.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <new>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace overlapsim::sim {

namespace {

// The reply written when the child aborts because memory ran out: SimGrid's allocator aborts
// (xbt_die) instead of throwing std::bad_alloc. Formatted before the body runs; written from the
// SIGABRT handler with write(2) alone.
char g_out_of_memory_reply[512];
std::size_t g_out_of_memory_length = 0;
int g_reply_fd = -1;

// Whether this process cannot map one more MiB: the address-space limit is reached.
bool memory_exhausted() {
  void* p = ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return true;
  ::munmap(p, 1 << 20);
  return false;
}

extern "C" void on_abort(int) {
  if (g_reply_fd >= 0 && memory_exhausted()) {
    [[maybe_unused]] const auto n =
        ::write(g_reply_fd, g_out_of_memory_reply, g_out_of_memory_length);
    ::_exit(0);
  }
  ::signal(SIGABRT, SIG_DFL);
  ::raise(SIGABRT);
}

std::string limit_text() {
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    return fmt::format("the address-space limit (ulimit -v) of {} MiB", as.rlim_cur >> 20);
  return "the machine's memory";
}

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

// The reply's first byte: a part of `bytes` bytes follows (a 64-bit length, then the bytes), the
// body's reply, or its error message.
constexpr char kPart = 'P';
constexpr char kReply = '0';
constexpr char kError = '1';

// Reads exactly `n` bytes; false at the end of the pipe.
bool read_exact(int fd, char* out, std::size_t n) {
  while (n > 0) {
    throw_if_interrupted();
    const ssize_t got = ::read(fd, out, n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return false;
    out += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

} // namespace

ChildProcess::ChildProcess(const std::function<std::string()>& body) {
  start([&body](const SendPart&) { return body(); });
}

ChildProcess::ChildProcess(const std::function<std::string(const SendPart&)>& body) {
  start(body);
}

void ChildProcess::start(const std::function<std::string(const SendPart&)>& body) {
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
      _exit(4);                 // the parent died before the request took effect
    reset_interrupt_handlers(); // the parent's guard (files/interruption.h) is the parent's
    ::close(fds[0]);
    const auto out_of_memory = [] {
      return fmt::format(
          "1out of memory: the simulation needed more than {} allows; use fewer GPUs or steps",
          limit_text());
    };
    const std::string oom = out_of_memory();
    g_out_of_memory_length = std::min(oom.size(), sizeof g_out_of_memory_reply);
    std::memcpy(g_out_of_memory_reply, oom.data(), g_out_of_memory_length);
    g_reply_fd = fds[1];
    ::signal(SIGABRT, on_abort);
    // A status byte, then the body's bytes (written as they are: no second copy of a large reply)
    // or its error message.
    std::string reply;
    bool done = false;
    const SendPart send_part = [fd = fds[1]](std::string_view part) {
      const char tag = kPart;
      const auto size = static_cast<std::uint64_t>(part.size());
      write_all(fd, {&tag, 1});
      write_all(fd, {reinterpret_cast<const char*>(&size), sizeof size});
      write_all(fd, part);
    };
    try {
      reply = body(send_part);
      done = true;
    } catch (const std::bad_alloc&) {
      reply.assign(out_of_memory());
    } catch (const std::exception& e) {
      reply.assign(1, kError);
      reply += e.what();
    }
    if (done)
      write_all(fds[1], {&kReply, 1});
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

std::string ChildProcess::collect(const std::function<void(std::string_view)>& on_part) {
  std::string reply;
  // Parts first, each read whole into one buffer and handed on.
  std::string part;
  char tag = 0;
  while (read_exact(fd_, &tag, 1) && tag == kPart) {
    std::uint64_t size = 0;
    if (!read_exact(fd_, reinterpret_cast<char*>(&size), sizeof size))
      break;
    part.resize(size);
    if (!read_exact(fd_, part.data(), part.size()))
      break;
    if (!on_part)
      throw std::logic_error("ChildProcess: the child sent a part nobody collects");
    on_part(part);
    tag = 0;
  }
  if (tag != 0 && tag != kPart)
    reply.assign(1, tag);
  std::string{}.swap(part);
  char buf[1 << 16];
  for (;;) {
    // Interrupted (SIGINT, SIGTERM): the destructor kills and reaps the child. Checked after the
    // end of the reply too: a Ctrl-C reaches the child as well, which may die first.
    throw_if_interrupted();
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buf, static_cast<std::size_t>(n));
  }
  throw_if_interrupted();
  ::close(fd_);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  fd_ = -1;
  if (!reply.empty() && reply[0] == kError)
    throw std::runtime_error(reply.substr(1));
  if (reply.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(
        WIFSIGNALED(status)
            ? fmt::format("the process died of signal {} ({}){}", WTERMSIG(status),
                          ::strsignal(WTERMSIG(status)),
                          WTERMSIG(status) == SIGKILL
                              ? "; the kernel kills a process so when memory runs out"
                              : "")
            : fmt::format("the process ended with exit status {}", WEXITSTATUS(status)));
  reply.erase(0, 1); // in place: a large reply is not copied
  return reply;
}

} // namespace overlapsim::sim
