// `overlapsim sweep`: a scenario over the cartesian grid of --vary values, one summary with a row
// per point and algorithm; `overlapsim merge`: shard summaries of one sweep joined back into one.
#pragma once

#include "scenario/scenario.h"

#include <cstddef>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace overlapsim::cli {

struct SweepOptions {
  std::string scenario;
  std::string out;                    // default: the scenario's output.dir
  std::vector<std::string> vary;      // "key.path=v1,v2,..."
  std::vector<std::string> overrides; // --set
  std::string shard;                  // "i/n": points with index % n == i
  bool shard_one_based = false; // i counts from 1 (Slurm --array=1-n): points index % n == i-1
  int jobs = 0;                 // parallel points; 0: the number of cores
  bool plots = true;
  bool progress = true;
  bool force = false;     // run points past the work budget (cli/work_budget.h)
  std::string max_memory; // --max-memory (default: the memory available now)
  std::string max_time;   // --max-time (default: 10 min, cli/work_budget.h)
};

struct SweepPoint {
  int index = 0;
  std::vector<std::pair<std::string, std::string>> values; // key, value as written
};

// The grid of "key=v1,v2" lists, the first varying slowest.
std::vector<SweepPoint> sweep_grid(const std::vector<std::string>& vary);

// What a point's child process computes: its rows as a JSON list (simulate_point by default;
// tests pass a body that dies, to check that a point killed by a signal becomes its error rows).
using PointBody = std::function<std::string(const scenario::Scenario&, const SweepPoint&)>;

// The rows of one point, simulated: a JSON list with a row per algorithm of `scenario`, in its
// order, each with the varied keys first and `point` last.
std::string simulate_point(const scenario::Scenario& scenario, const SweepPoint& point);

// Runs the points (scenarios[i] is points[i]'s), up to `jobs` at once, each in a child process;
// their rows by point index. A point whose process fails (an exception, a signal, an abort, a
// non-zero exit status, a reply that is not its rows) becomes one error row per algorithm saying
// how, and the others keep theirs (issue 26.9).
std::map<int, std::vector<nlohmann::ordered_json>>
run_sweep_points(const std::vector<scenario::Scenario>& scenarios,
                 const std::vector<const SweepPoint*>& points, std::size_t jobs, bool progress,
                 const PointBody& body = {});

int sweep_command(const SweepOptions& options);
// The same with each point computed by `body` (tests: a point that dies).
int sweep_command(const SweepOptions& options, const PointBody& body);
int merge_command(const std::string& out, const std::vector<std::string>& shards);

} // namespace overlapsim::cli
