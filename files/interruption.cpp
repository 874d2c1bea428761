#include "files/interruption.h"

#include <atomic>
#include <csignal>
#include <cstring>
#include <fmt/format.h>

namespace overlapsim {

namespace {

std::atomic<int> g_signal{0};
std::atomic<pid_t> g_child{-1};
int g_depth = 0; // guards alive; the outermost installs and restores the handlers
struct sigaction g_old_int {};
struct sigaction g_old_term {};

extern "C" void on_interrupt(int sig) {
  if (g_signal.load() != 0) {
    // A second signal: stop now. It is blocked while this handler runs, so it ends the process
    // right after the handler returns.
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  g_signal.store(sig);
  if (const pid_t child = g_child.load(); child > 0)
    ::kill(child, sig);
}

} // namespace

Interrupted::Interrupted(int signal)
    : std::runtime_error(fmt::format("interrupted by signal {} ({}); nothing was published", signal,
                                     ::strsignal(signal))),
      signal_(signal) {}

InterruptGuard::InterruptGuard() {
  if (g_depth++ > 0)
    return;
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART: read(), poll() and waitpid() return EINTR to their loops
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  if (--g_depth > 0)
    return;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

int interrupt_signal() noexcept {
  return g_signal.load();
}

void throw_if_interrupted() {
  if (const int sig = g_signal.load(); sig != 0)
    throw Interrupted(sig);
}

ForegroundChild::ForegroundChild(pid_t pid) {
  g_child.store(pid);
  if (const int sig = g_signal.load(); sig != 0) // it came before the pid was known
    ::kill(pid, sig);
}

ForegroundChild::~ForegroundChild() {
  g_child.store(-1);
}

void reset_interrupt_handlers() noexcept {
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
}

} // namespace overlapsim
