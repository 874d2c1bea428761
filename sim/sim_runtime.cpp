#include "sim/sim_runtime.h"

#include "sim/collectives.h"
#include "sim/platform.h"
#include "sim/sim_worker.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

SimulationResult simulate_in_process(const spec::Scenario& scenario, const Algorithm& algorithm,
                                     const ProgressFn& progress) {
  static bool used = false;
  if (used)
    throw std::logic_error("simulate_in_process: SimGrid runs one simulation per process");
  used = true;

  xbt_log_control_set("root.thres:critical");
  int argc = 1;
  char name[] = "overlapsim";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  configure_engine(engine, scenario.cluster);
  const Platform platform = build_platform(scenario.cluster);

  const Topology topology(scenario.cluster.nodes, scenario.cluster.gpus_per_node);
  Network network(platform, scenario.cluster, topology);
  SimulationResult result;
  result.warnings = platform.warnings;
  Trace& trace = result.trace;
  trace.workers = topology.world_size();
  trace.gpus_per_node = topology.gpus_per_node();
  SimContext context{scenario, topology, platform, network, trace, progress};

  std::vector<std::unique_ptr<SimWorker>> workers;
  std::vector<std::unique_ptr<WorkerProgram>> programs;
  for (int r = 0; r < topology.world_size(); ++r) {
    workers.push_back(std::make_unique<SimWorker>(context, r));
    programs.push_back(algorithm.program(*workers.back()));
  }
  // Actor names carry the stream: 'c' compute, 'm' communication (sim_worker.cpp reads it).
  for (int r = 0; r < topology.world_size(); ++r) {
    auto* host = platform.gpus[static_cast<std::size_t>(r)];
    auto* program = programs[static_cast<std::size_t>(r)].get();
    sg4::Actor::create(fmt::format("c{}", r), host, [program] { program->run_compute(); });
    sg4::Actor::create(fmt::format("m{}", r), host, [program] { program->run_comm(); });
  }
  engine.run();
  trace.end_time = sg4::Engine::get_clock();
  for (const auto& w : workers)
    trace.peak_memory.push_back(w->peak_memory());
  return result;
}

namespace {

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      _exit(3);
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string frame(char status, std::string_view body) {
  std::string s(1, status);
  s += body;
  return s;
}

} // namespace

SimulationResult simulate(const spec::Scenario& scenario, const spec::AlgorithmSpec& spec,
                          const ProgressFn& progress) {
  const auto algorithm = make_algorithm(spec); // bad options fail here, in the caller
  return simulate(scenario, *algorithm, progress);
}

SimulationResult simulate(const spec::Scenario& scenario, const Algorithm& algorithm,
                          const ProgressFn& progress) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(fmt::format("cannot fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    try {
      auto result = simulate_in_process(scenario, algorithm, progress);
      std::string body;
      const auto count = static_cast<std::uint32_t>(result.warnings.size());
      body.append(reinterpret_cast<const char*>(&count), sizeof count);
      for (const auto& w : result.warnings) {
        const auto len = static_cast<std::uint32_t>(w.size());
        body.append(reinterpret_cast<const char*>(&len), sizeof len);
        body += w;
      }
      body += result.trace.serialize();
      write_all(fds[1], frame('0', body));
    } catch (const std::exception& e) {
      write_all(fds[1], frame('1', e.what()));
    }
    ::close(fds[1]);
    _exit(0); // no atexit handlers: SimGrid's teardown belongs to the child's engine only
  }
  ::close(fds[1]);
  const std::string reply = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (reply.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::string how = WIFSIGNALED(status)
                                ? fmt::format("killed by signal {}", WTERMSIG(status))
                                : fmt::format("exit status {}", WEXITSTATUS(status));
    throw std::runtime_error(fmt::format("simulation of '{}' failed ({}); a deadlocked algorithm "
                                         "or a collective called on only some "
                                         "ranks of a group does this",
                                         algorithm.name(), how));
  }
  if (reply[0] == '1')
    throw std::runtime_error(
        fmt::format("simulation of '{}' failed: {}", algorithm.name(), reply.substr(1)));
  std::string_view body(reply);
  body.remove_prefix(1);
  SimulationResult result;
  std::uint32_t count = 0;
  std::memcpy(&count, body.data(), sizeof count);
  body.remove_prefix(sizeof count);
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint32_t len = 0;
    std::memcpy(&len, body.data(), sizeof len);
    body.remove_prefix(sizeof len);
    result.warnings.emplace_back(body.substr(0, len));
    body.remove_prefix(len);
  }
  result.trace = Trace::deserialize(body);
  return result;
}

} // namespace overlapsim::sim
