// overlapsim: simulate data-parallel training algorithms on GPU clusters (and check them for real).
#include "algorithms/algorithm.h"
#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <execinfo.h>
#include <filesystem>
#include <string>
#include <ucontext.h>
#include <unistd.h>

namespace {

// `validate` and `profile` (except importing nccl-tests logs and profiler traces) need LibTorch,
// which lives in the sibling executable: run it in this process's place.
void hand_real_runs_to_sibling([[maybe_unused]] int argc, [[maybe_unused]] char** argv) {
#ifdef OVERLAPSIM_REAL_SIBLING
  if (argc < 2 || (std::strcmp(argv[1], "validate") != 0 && std::strcmp(argv[1], "profile") != 0))
    return;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--import-nccl-tests") == 0 ||
        std::strcmp(argv[i], "--import-torch-profiler") == 0 ||
        std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0)
      return;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return;
  const auto sibling = (self.parent_path() / OVERLAPSIM_REAL_SIBLING).string();
  ::execv(sibling.c_str(), argv); // returns only on failure: then this binary says what is missing
#endif
}

// A crash (a bug here, or in a library at exit) names itself and where it happened on stderr,
// then dies of the same signal, so the exit status still says what happened.
void report_fatal_signals() {
  for (const int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    struct sigaction action {};
    action.sa_flags = SA_RESETHAND | SA_SIGINFO;
    action.sa_sigaction = [](int signal, siginfo_t*, void* context) {
      static const char head[] = "overlapsim: fatal signal; backtrace:\n";
      [[maybe_unused]] auto written = ::write(STDERR_FILENO, head, sizeof head - 1);
      void* frames[64];
      ::backtrace_symbols_fd(frames, ::backtrace(frames, 64), STDERR_FILENO);
#if defined(__x86_64__) && defined(__linux__)
      // A call through a null or stale function pointer leaves nothing to unwind: the faulting
      // address and the return address on top of the stack still say who called.
      const auto* uc = static_cast<const ucontext_t*>(context);
      void* at[2] = {reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]),
                     *reinterpret_cast<void* const*>(uc->uc_mcontext.gregs[REG_RSP])};
      static const char where[] = "faulting instruction, then the return address on the stack:\n";
      written = ::write(STDERR_FILENO, where, sizeof where - 1);
      ::backtrace_symbols_fd(at, 2, STDERR_FILENO);
#else
      (void)context;
#endif
      ::raise(signal);
    };
    ::sigaction(sig, &action, nullptr);
  }
}

} // namespace

int main(int argc, char** argv) {
  report_fatal_signals();
  hand_real_runs_to_sibling(argc, argv);
  CLI::App app{
      "overlapsim: per-GPU timelines, idle time, exposed communication, memory and speedups "
      "of DDP, ZeRO-1, ACCO, CDP and friends on simulated GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", overlapsim::cli::version_string());
  overlapsim::cli::add_commands(app);
  // CLI11 answers an unknown command with "A subcommand is required": name it and the commands.
  if (argc >= 2 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto* command : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || command->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + command->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "overlapsim: unknown command '%s'; expected one of: %s\n", argv[1],
                   names.c_str());
      return 1;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints its message, and returns 0 for --help and --version but its own codes (105,
    // 106...) for errors: a command-line error is bad input, 1 as documented (issue 63.8).
    return app.exit(e) == 0 ? 0 : 1;
  }
  return overlapsim::cli::exit_code();
}
