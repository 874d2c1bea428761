#include "cli/plots.h"

#include "files/interruption.h"
#include "files/output_stage.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <new>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#ifndef OVERLAPSIM_SOURCE_DIR
#define OVERLAPSIM_SOURCE_DIR "."
#endif

namespace overlapsim::cli {

namespace fs = std::filesystem;

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

} // namespace

void draw_plots(const std::string& dir) {
  const std::string script = env_or("OVERLAPSIM_PLOTS_SCRIPT", std::string(OVERLAPSIM_SOURCE_DIR) +
                                                                   "/plots/overlapsim_plots.py");
  // Debian's matplotlib lives with the system interpreter, which may not be first on PATH.
  const std::string python =
      env_or("OVERLAPSIM_PYTHON", fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3");
  std::error_code ec;
  if (!fs::is_regular_file(script, ec))
    throw std::runtime_error(fmt::format(
        "plots: the plotting script {} is missing (set OVERLAPSIM_PLOTS_SCRIPT, or pass "
        "--no-plots)",
        script));
  std::fflush(nullptr);
  // SIGINT and SIGTERM are caught (and passed on to the script) while it runs; std::system ignored
  // SIGINT instead, so an interrupted command went on to publish outputs without plots.
  InterruptGuard guard;
  throw_if_interrupted();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(fmt::format("plots: cannot fork: {}", std::strerror(errno)));
  if (pid == 0) {
    // The script dies with this process, and with default dispositions (no Python traceback on
    // SIGINT: it just stops, and this process reports the interruption).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(126);
    reset_interrupt_handlers();
    std::vector<std::string> args = {python, script, dir};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp(python.c_str(), argv.data());
    std::fprintf(stderr, "overlapsim plot: cannot run %s: %s\n", python.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  {
    ForegroundChild foreground(pid);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  throw_if_interrupted();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  throw std::runtime_error(
      WIFSIGNALED(status)
          ? fmt::format("plots: the plotting script died of signal {} ({}); nothing was "
                        "published (--no-plots skips the plots)",
                        WTERMSIG(status), ::strsignal(WTERMSIG(status)))
          : fmt::format("plots: the plotting script exited with status {} (its message is "
                        "above); nothing was published (--no-plots skips the plots)",
                        WEXITSTATUS(status)));
}

int plot_command(const std::string& dir) {
  try {
    // Only a directory overlapsim published is redrawn: its files are staged (hard links) without
    // the old plots, the plots drawn beside them, and the whole published at once.
    const auto files = published_files(dir);
    if (std::find(files.begin(), files.end(), "summary.json") == files.end())
      throw std::runtime_error(fmt::format("{}: holds no summary.json to plot", dir));
    OutputStage stage(dir);
    for (const auto& f : files) {
      if (ends_with(f, ".png"))
        continue;
      const fs::path from = fs::path(dir) / f, to = fs::path(stage.path()) / f;
      std::error_code ec;
      fs::create_directories(to.parent_path(), ec);
      fs::create_hard_link(from, to, ec);
      if (ec && !fs::copy_file(from, to, ec))
        throw std::runtime_error(
            fmt::format("{}: cannot stage {}: {}", dir, from.string(), ec.message()));
    }
    draw_plots(stage.path());
    stage.publish();
    std::printf("plots in %s\n", dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    return report_failure("overlapsim plot", e);
  }
}

int report_failure(const char* command, const std::exception& e) {
  // std::bad_alloc says only "std::bad_alloc" (issue 63.4).
  std::fprintf(stderr, "%s: %s\n", command,
               dynamic_cast<const std::bad_alloc*>(&e) != nullptr
                   ? "out of memory (free some memory, raise ulimit -v, or ask for less)"
                   : e.what());
  if (const auto* interrupted = dynamic_cast<const Interrupted*>(&e))
    return 128 + interrupted->signal();
  return 1;
}

} // namespace overlapsim::cli
