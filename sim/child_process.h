// Work in a forked child process whose result comes back through a pipe. SimGrid runs one engine
// per process, so every simulation runs in a child; sweeps run several children at once.
#pragma once

#include <functional>
#include <string>
#include <sys/types.h>

namespace overlapsim::sim {

class ChildProcess {
public:
  // Forks and runs `body` in the child; what it returns is the reply. An exception thrown by the
  // body becomes the message of the exception collect() throws. Throws when it cannot fork.
  explicit ChildProcess(const std::function<std::string()>& body);
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess(); // a child never collected is killed and reaped

  // Reads the reply to its end and reaps the child. Throws std::runtime_error with the body's
  // message, or saying how the child died (a crash, an abort in a deadlocked simulation).
  std::string collect();

private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

} // namespace overlapsim::sim
