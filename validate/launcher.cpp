#include "validate/launcher.h"

#include "validate/emulated_link.h"
#include "validate/heartbeat.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <fstream>
#include <sched.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace overlapsim::real {

namespace {

std::atomic<int> interrupted{0};
extern "C" void on_signal(int sig) {
  interrupted.store(sig);
}

std::string describe(int status) {
  if (WIFEXITED(status))
    return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       ::strsignal(WTERMSIG(status)));
  return "stopped";
}

// Restores the previous handlers when the launch ends.
class SignalScope {
public:
  SignalScope() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    interrupted.store(0);
  }
  ~SignalScope() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Whether a process is stopped (state T or t in /proc/<pid>/stat).
bool stopped(pid_t pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() &&
         (line[close + 2] == 'T' || line[close + 2] == 't');
}

// A port nothing listens on now (the kernel's pick), for MASTER_PORT.
int free_port() {
  return 20000 + static_cast<int>(::getpid() % 20000);
}

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set))
        ids.push_back(c);
  return ids;
}

} // namespace

std::vector<std::vector<int>> core_shares(const std::vector<int>& available, int workers) {
  std::vector<std::vector<int>> shares(static_cast<std::size_t>(std::max(0, workers)));
  if (available.empty())
    return shares;
  const std::size_t per = std::max<std::size_t>(1, available.size() / shares.size());
  for (std::size_t r = 0; r < shares.size(); ++r)
    for (std::size_t i = 0; i < per; ++i)
      shares[r].push_back(available[(r * per + i) % available.size()]);
  return shares;
}

void launch_local(const LocalLaunch& l) {
  std::optional<EmulatedNetwork> net;
  if (l.emulate_rate_Bps)
    net.emplace(l.workers, *l.emulate_rate_Bps);
  SignalScope signals;
  const std::string store = l.work_dir + "/rendezvous";
  ::unlink(store.c_str());
  const std::string master = net ? net->address(0) : "127.0.0.1";
  const int port = free_port();

  const auto shares =
      l.bind_cores ? core_shares(allowed_cpus(), l.workers) : std::vector<std::vector<int>>{};
  std::vector<pid_t> pids(static_cast<std::size_t>(l.workers), -1);
  auto kill_all = [&] {
    for (pid_t p : pids)
      if (p > 0)
        ::kill(p, SIGKILL);
    for (pid_t& p : pids)
      if (p > 0) {
        ::waitpid(p, nullptr, 0);
        p = -1;
      }
  };
  for (int r = 0; r < l.workers; ++r) {
    std::vector<std::string> env_strings = {
        fmt::format("RANK={}", r),
        fmt::format("WORLD_SIZE={}", l.workers),
        fmt::format("LOCAL_RANK={}", r),
        fmt::format("MASTER_ADDR={}", master),
        fmt::format("MASTER_PORT={}", port),
        fmt::format("OVERLAPSIM_STORE_FILE={}", store),
        fmt::format("OVERLAPSIM_HEARTBEAT={}/heartbeat.{}", l.work_dir, r),
        fmt::format("OVERLAPSIM_BIND_ADDR={}", net ? net->address(r) : master),
        "OVERLAPSIM_LAUNCHER=overlapsim",
        "OMP_NUM_THREADS=1",
        "OPENBLAS_NUM_THREADS=1",
    };
    const std::string netns_path = net ? "/var/run/netns/" + net->netns(r) : "";
    const pid_t pid = ::fork();
    if (pid < 0) {
      kill_all();
      throw std::runtime_error(fmt::format("cannot start worker {}: {}", r, std::strerror(errno)));
    }
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL); // never outlive the launcher
      for (const auto& e : env_strings)
        ::putenv(const_cast<char*>(e.c_str()));
      ::unsetenv("SLURM_PROCID"), ::unsetenv("OMPI_COMM_WORLD_RANK");
      if (!shares.empty() && !shares[static_cast<std::size_t>(r)].empty()) {
        cpu_set_t mine;
        CPU_ZERO(&mine);
        for (int c : shares[static_cast<std::size_t>(r)])
          CPU_SET(c, &mine);
        if (::sched_setaffinity(0, sizeof mine, &mine) != 0)
          std::fprintf(stderr, "worker %d: cannot bind to its cores: %s (running unbound)\n", r,
                       std::strerror(errno));
      }
      if (!netns_path.empty()) {
        const int fd = ::open(netns_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) {
          std::fprintf(stderr, "worker %d: cannot enter %s: %s\n", r, netns_path.c_str(),
                       std::strerror(errno));
          ::_exit(127);
        }
      }
      std::vector<char*> argv;
      for (const auto& a : l.argv)
        argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv("/proc/self/exe", argv.data());
      std::fprintf(stderr, "worker %d: cannot run %s: %s\n", r, l.argv[0].c_str(),
                   std::strerror(errno));
      ::_exit(127);
    }
    pids[static_cast<std::size_t>(r)] = pid;
  }

  // Watch: the first failure (or a signal) stops the job.
  std::string failure;
  int running = l.workers;
  while (running > 0) {
    if (const int sig = interrupted.load(); sig != 0) {
      kill_all();
      throw std::runtime_error(
          fmt::format("interrupted by signal {} ({}): workers stopped", sig, ::strsignal(sig)));
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (it == pids.end())
      continue;
    const int rank = static_cast<int>(it - pids.begin());
    *it = -1;
    --running;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      continue;
    failure = fmt::format("worker rank {} {}", rank, describe(status));
    // Blame a hung peer: the rank whose last sign of progress is oldest, when clearly older than
    // the failing rank's (that one probably timed out waiting for it).
    if (WIFEXITED(status)) {
      const double own = seconds_since_heartbeat(fmt::format("{}/heartbeat.{}", l.work_dir, rank));
      int stalest = -1;
      double oldest = own + 1.0;
      for (int r = 0; r < l.workers; ++r) {
        const double age = seconds_since_heartbeat(fmt::format("{}/heartbeat.{}", l.work_dir, r));
        if (r != rank && pids[static_cast<std::size_t>(r)] > 0 && age > oldest)
          stalest = r, oldest = age;
      }
      if (stalest >= 0)
        failure += fmt::format("; worker rank {} had made no progress for {:.1f} s (hung?)",
                               stalest, oldest);
    }
    for (int r = 0; r < l.workers; ++r)
      if (pids[static_cast<std::size_t>(r)] > 0 && stopped(pids[static_cast<std::size_t>(r)]))
        failure += fmt::format("; worker rank {} is stopped (SIGSTOP or a debugger): the others "
                               "timed out waiting for it",
                               r);
    // Give the others a moment to print their own view (a peer's timeout names what it waited
    // for), then stop them.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(l.grace_s);
    while (running > 0 && std::chrono::steady_clock::now() < deadline) {
      const pid_t p = ::waitpid(-1, &status, WNOHANG);
      if (p > 0) {
        const auto jt = std::find(pids.begin(), pids.end(), p);
        if (jt != pids.end())
          *jt = -1, --running;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    kill_all();
    break;
  }
  ::unlink(store.c_str());
  if (!failure.empty())
    throw std::runtime_error(failure + "; the job was stopped");
}

} // namespace overlapsim::real
