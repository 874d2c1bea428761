// SimRuntime: runs an algorithm's worker programs on the simulated cluster. Each GPU is a SimGrid
// host with two actors (the compute stream and the communication stream); compute ops are Exec
// activities on the host, collectives are flows (collective/network.h), and every op lands in the
// trace.
#pragma once

#include "algorithms/algorithm.h"
#include "runtime/collective_size.h"
#include "runtime/replicator_use.h"
#include "trace/trace.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace overlapsim::sim {

struct SimulationResult {
  Trace trace;
  std::vector<std::string> warnings;
  // Which ranks ran (sim/rank_classes.h): "classes (8 of 16384 GPUs simulated)" or "full (...)".
  std::string simulation;
  // Statistical rank classes (sim/rank_classes.h): what the numbers approximate, and how; "" when
  // every simulated GPU ran as itself.
  std::string approximation;
  // How many times the simulated ranks issued each collective size (runtime/collective_size.h).
  std::map<CollectiveSize, std::int64_t> collective_calls;
  // And each replicator phase with its piece size (runtime/replicator_use.h).
  std::map<ReplicatorSize, std::int64_t> replicator_calls;
};

// Called by worker 0 after each of its optimizer steps: (steps done, steps in all).
using ProgressFn = std::function<void(int, int)>;

// Simulates in this process. SimGrid allows one engine per process, so this may run only once per
// process; simulate() runs it in a child process instead and may be called any number of times.
SimulationResult simulate_in_process(const scenario::Scenario& scenario, const Algorithm& algorithm,
                                     const ProgressFn& progress = {});

// Forks, simulates in the child, and returns its result. Throws std::runtime_error with the child's
// message when the simulation fails (a deadlocked algorithm, a bad collective call).
SimulationResult simulate(const scenario::Scenario& scenario,
                          const scenario::AlgorithmSpec& algorithm,
                          const ProgressFn& progress = {});
SimulationResult simulate(const scenario::Scenario& scenario, const Algorithm& algorithm,
                          const ProgressFn& progress = {});

} // namespace overlapsim::sim
