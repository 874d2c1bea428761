#include "validate/emulated_link.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fmt/format.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace overlapsim::real {

int run_command(const std::vector<std::string>& argv, std::string* output) {
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0)
    return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string text;
  std::array<char, 4096> buf{};
  for (ssize_t n; (n = ::read(pipe_fds[0], buf.data(), buf.size())) > 0;)
    text.append(buf.data(), static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  if (rc != 0)
    return -1;
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (output)
    *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {
void must(const std::vector<std::string>& argv) {
  std::string out;
  const int rc = run_command(argv, &out);
  if (rc != 0) {
    std::string cmd;
    for (const auto& a : argv)
      cmd += (cmd.empty() ? "" : " ") + a;
    throw std::runtime_error(fmt::format("--emulate-link: '{}' failed ({}): {}", cmd,
                                         rc < 0 ? "could not run" : fmt::format("status {}", rc),
                                         out));
  }
}
} // namespace

EmulatedNetwork::EmulatedNetwork(int workers, double rate_Bps) : rate_Bps_(rate_Bps) {
  if (::geteuid() != 0)
    throw std::runtime_error("--emulate-link needs root: it creates network namespaces and "
                             "shapes veth links with tc (run as root, or drop --emulate-link)");
  if (workers > 250)
    throw std::runtime_error("--emulate-link supports at most 250 workers");
  if (!(rate_Bps > 0))
    throw std::runtime_error("--emulate-link: the rate must be positive");
  // Short names: interface names have at most 15 characters.
  prefix_ = fmt::format("ovs{}", ::getpid() % 100000);
  hub_ = prefix_ + "h";
  const std::string rate = fmt::format("{}bit", std::llround(rate_Bps * 8));
  // tbf needs a bucket of at least one timer tick's worth of bytes at the rate.
  const std::string burst =
      fmt::format("{}", std::max<long long>(65536, std::llround(rate_Bps / 100)));
  const std::string latency = "100ms"; // queue bound (NOTES.md: faithful rates at 100 Mbit/s)
  try {
    must({"ip", "netns", "add", hub_});
    hub_made_ = true;
    must({"ip", "-n", hub_, "link", "set", "lo", "up"});
    must({"ip", "-n", hub_, "link", "add", "br0", "type", "bridge"});
    must({"ip", "-n", hub_, "link", "set", "br0", "up"});
    for (int r = 0; r < workers; ++r) {
      const std::string ns = fmt::format("{}w{}", prefix_, r);
      must({"ip", "netns", "add", ns});
      namespaces_.push_back(ns);
      const std::string a = fmt::format("{}a{}", prefix_, r), b = fmt::format("{}b{}", prefix_, r);
      must({"ip", "link", "add", a, "type", "veth", "peer", "name", b});
      must({"ip", "link", "set", a, "netns", ns});
      must({"ip", "link", "set", b, "netns", hub_});
      must({"ip", "-n", ns, "link", "set", "lo", "up"});
      must({"ip", "-n", ns, "addr", "add", address(r) + "/24", "dev", a});
      must({"ip", "-n", ns, "link", "set", a, "up"});
      must({"ip", "-n", hub_, "link", "set", b, "master", "br0"});
      must({"ip", "-n", hub_, "link", "set", b, "up"});
      // Shape both directions: the worker's sending (its end) and receiving (the hub's end).
      must({"tc", "-n", ns, "qdisc", "add", "dev", a, "root", "tbf", "rate", rate, "burst", burst,
            "latency", latency});
      must({"tc", "-n", hub_, "qdisc", "add", "dev", b, "root", "tbf", "rate", rate, "burst", burst,
            "latency", latency});
    }
  } catch (...) {
    cleanup();
    throw;
  }
}

std::string EmulatedNetwork::address(int rank) const {
  return fmt::format("10.233.0.{}", rank + 1);
}

void EmulatedNetwork::cleanup() noexcept {
  for (const auto& ns : namespaces_)
    run_command({"ip", "netns", "del", ns});
  namespaces_.clear();
  if (hub_made_)
    run_command({"ip", "netns", "del", hub_});
  hub_made_ = false;
}

EmulatedNetwork::~EmulatedNetwork() {
  cleanup();
}

} // namespace overlapsim::real
