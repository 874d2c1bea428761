// Where time goes, from any trace (simulated or measured): the dependency graph of the ops
// (trace/dependency_graph.h), the critical path of the steady state, the attribution of each GPU's
// idle time to its cause, and the lower bound max(compute, communication) per step.
#pragma once

#include "trace/metrics.h"
#include "trace/trace.h"

#include <string>
#include <vector>

namespace overlapsim {

struct CriticalOp {
  std::string name;
  int worker = 0;
  OpCategory category = OpCategory::forward;
  double seconds = 0; // this op's share of the path
  // The longest contributing instance's whole duration: longer than a step, the op (DiLoCo's
  // outer sync) is amortised over the window of one average step (issue 62.5).
  double op_seconds = 0;
};

struct CriticalPath {
  double length_s = 0;         // from the first to the last op of the path, per step
  double busy_s = 0;           // sum of the durations of its ops, per step
  std::vector<CriticalOp> top; // the largest contributions, aggregated by op name and GPU
  std::array<double, kOpCategories> by_category{}; // per step, indexed by OpCategory
};

// Fractions of each GPU's steady-state time, summing to 1.
struct IdleBreakdown {
  double compute = 0;         // the compute stream runs an op
  double exposed_comm = 0;    // it waits while its own data is on the wire
  double waiting = 0;         // it waits for a slower peer inside a collective or a point-to-point
  double pipeline_bubble = 0; // it waits in a pipeline receive (split_idle's bubble, issue 65.3)
  double idle_other = 0;      // anything else (start-up, dependencies without communication)
};

struct Analysis {
  CriticalPath critical_path;
  std::vector<IdleBreakdown> idle; // per GPU
  IdleBreakdown idle_mean;
  // Per step: max over GPUs of max(compute, communication busy time), within the window of the
  // iteration time.
  double lower_bound_s = 0;
};

Analysis analyze(const Trace& trace, const Metrics& metrics);

// Per trace event, when the peers it exchanges data with were all there: for a collective op, when
// its last participant started it (the k-th same-named op of a step on each GPU); for a
// point-to-point receive, when the matching send started, and for that send, when the receive was
// posted (a rendezvous); -1 for any other event. From the op's
// start until then its GPU waits for a slower peer, after it the data moves; a time before the
// op's start means no wait.
std::vector<double> peer_arrivals(const Trace& trace);

} // namespace overlapsim
