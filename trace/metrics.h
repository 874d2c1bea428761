// Metrics of SCENARIO.md computed from a trace (simulated or measured). Iteration time and
// throughput use the steady-state window that opens when every worker has finished the warm-up
// steps and closes when every worker has finished the last step; per-GPU figures (idle, exposed
// communication, bytes) use each GPU's own steady-state steps, since staggered schedules end them
// at different times.
#pragma once

#include "trace/trace.h"

#include <vector>

namespace overlapsim {

struct Interval {
  double start;
  double end;
};

struct Metrics {
  double window_start_s = 0;
  double window_end_s = 0;
  int steps = 0;
  double iteration_time_s = 0; // window / steps
  // Each window step's own length: from the moment every worker had finished the step before to
  // the moment every worker has finished this one (they add up to the window). How much a real
  // run's steps vary, which one mean hides (a 0.5 s TCP stall in ten 15 ms steps).
  std::vector<double> step_times_s;
  double samples = 0;                  // samples consumed by the window's steps, whole cluster
  double throughput_samples_s = 0;     // samples / window
  std::vector<double> idle_fraction;   // per worker: compute stream idle / its own window
  std::vector<Interval> worker_window; // per worker: its own steady-state steps
  double idle_fraction_mean = 0;
  double idle_fraction_max = 0;
  // Communication not hidden behind computation, per step: `exposed` while the op's data moves,
  // `waiting` while it waits for a slower peer (before its last participant arrived; issue 27.1:
  // a straggler's peers showed all their waiting as exposed communication).
  std::vector<double> exposed_comm_per_worker_s;
  double exposed_comm_s = 0; // mean over workers
  std::vector<double> waiting_per_worker_s;
  double waiting_s = 0; // mean over workers
  // Compute-stream idle time while a pipeline receive is pending (issue 65.3: the stage waits for
  // the previous stage's activation or the next stage's gradient), per step; taken out of
  // `exposed` and `waiting`. 0 without pipeline parallelism.
  std::vector<double> pipeline_bubble_per_worker_s;
  double pipeline_bubble_s = 0;   // mean over workers
  double comm_bytes_per_step = 0; // mean over workers
  // comm_bytes_per_step by the link class it crossed (issue 25.6): inside a node, between nodes,
  // over a WAN between sites; the three add up to it.
  double intra_node_bytes_per_step = 0;
  double inter_node_bytes_per_step = 0;
  double wan_bytes_per_step = 0;
  double compute_s_per_step = 0;         // compute-stream busy time per step, mean over workers
  double slowest_compute_s_per_step = 0; // the same, of the slowest worker
  double comm_s_per_step = 0; // time with a collective in flight per step, mean over workers
  MemoryByCategory memory_breakdown{}; // worst worker
  double peak_memory_bytes = 0;
  double simulated_time_s = 0;
  double accumulation_mean = 0; // micro-batches per worker per step (window), when recorded
  double accumulation_stddev = 0;
  double accumulation_min = 0;
  double accumulation_max = 0;
};

// One communication op of a worker: it started, its last member arrived, it ended.
struct CommSpan {
  double start;
  double arrived;
  double end;
  bool pipeline = false; // a pipeline receive (is_pipeline_receive)
};

// A worker's compute-stream idle time with communication in flight, split by what would remove it
// (issue 62.4). Within each gap between compute ops, the ops that end in it decide: until the
// latest of their peers arrived late (after this worker had started the op), the gap waits for
// peers, whether or not data of earlier ops moves meanwhile, since a faster network would not end
// it sooner; from then, time with data moving is `exposed` (a faster network removes it) and time
// still waiting is `waiting`. Idle time with no op in flight is neither. Where the network paces
// every worker, no peer arrives late, yet a faster network shortens the window only down to the
// slowest worker's compute: `removable` (the window less that) caps `exposed`, the rest waits.
// Idle time while a pipeline receive is in flight is `bubble` (issue 65.3), neither of the two:
// the stage waits for its neighbour's compute, which no network removes; pipeline receives take
// no part in the rest of the split.
struct IdleSplit {
  double exposed = 0;
  double waiting = 0;
  double bubble = 0;
};
IdleSplit split_idle(const std::vector<Interval>& busy, const std::vector<CommSpan>& comm,
                     Interval window, double removable);

// Throws std::runtime_error when the trace lacks the step marks of the window.
Metrics compute_metrics(const Trace& trace, int warmup_steps, int steps);

// Length of the union of [start, end) intervals, and of the part of `a`'s union not covered by
// `b`'s union; the intervals need not be sorted or disjoint.
double union_length(std::vector<Interval> intervals);
double uncovered_length(std::vector<Interval> a, std::vector<Interval> b);
// The union of the intervals, sorted and disjoint.
std::vector<Interval> merged(std::vector<Interval> intervals);

} // namespace overlapsim
