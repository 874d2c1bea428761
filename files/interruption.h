// SIGINT and SIGTERM while a command works (issue 63.3). A command that writes outputs holds an
// InterruptGuard: the first signal is recorded and passed on to the child process in the
// foreground (the plotting script), and the command stops at its next check: a wait for a child
// process, the next output file, or publishing, which never happens after a signal. Its staging
// directory is removed as the stack unwinds and it exits 128 + the signal with one line. A
// second signal ends the process at once (its staging directory is then removed by the next run,
// files/output_stage.h).
#pragma once

#include <stdexcept>
#include <sys/types.h>

namespace overlapsim {

// A command stopped by SIGINT or SIGTERM: it publishes nothing and exits 128 + the signal.
class Interrupted : public std::runtime_error {
public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

private:
  int signal_;
};

// Catches SIGINT and SIGTERM for its lifetime (nested guards share the outermost one's). System
// calls are not restarted under it, so that a blocking wait returns to check.
class InterruptGuard {
public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

// The signal received under a guard, or 0.
int interrupt_signal() noexcept;

// Throws Interrupted when a signal was received under a guard.
void throw_if_interrupted();

// A child process that receives the signal as soon as it comes, for its lifetime; one at a time.
class ForegroundChild {
public:
  explicit ForegroundChild(pid_t pid);
  ~ForegroundChild();
  ForegroundChild(const ForegroundChild&) = delete;
  ForegroundChild& operator=(const ForegroundChild&) = delete;
};

// In a freshly forked child: the default dispositions back, so that it can be stopped.
void reset_interrupt_handlers() noexcept;

} // namespace overlapsim
