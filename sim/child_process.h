// Work in a forked child process whose result comes back through a pipe. SimGrid runs one engine
// per process, so every simulation runs in a child; sweeps run several children at once.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace overlapsim::sim {

class ChildProcess {
public:
  // Sends bytes to the parent while the body runs, ahead of its reply: collect() hands each part
  // to its `on_part` as it arrives, so neither process holds them all twice (issue 64.1: the trace
  // of a 1,024-GPU run, 550 MB, was in the child's memory, its copy and the parent's three).
  using SendPart = std::function<void(std::string_view)>;

  // Forks and runs `body` in the child; what it returns is the reply. An exception thrown by the
  // body becomes the message of the exception collect() throws. Throws when it cannot fork.
  explicit ChildProcess(const std::function<std::string()>& body);
  // The same, and the body may send parts before its reply.
  explicit ChildProcess(const std::function<std::string(const SendPart&)>& body);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess(); // a child never collected is killed and reaped

  // Reads the reply to its end and reaps the child. Throws std::runtime_error with the body's
  // message, or saying how the child died (a crash, an abort in a deadlocked simulation).
  // Parts sent before the reply go to `on_part`, in order (a part sent with none given is an
  // error).
  std::string collect(const std::function<void(std::string_view)>& on_part = {});

private:
  void start(const std::function<std::string(const SendPart&)>& body);

  pid_t pid_ = -1;
  int fd_ = -1;
};

} // namespace overlapsim::sim
