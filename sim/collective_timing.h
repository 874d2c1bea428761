// One collective on a scenario's cluster, timed the way nccl-tests reports it.
#pragma once

#include "runtime/runtime.h"
#include "scenario/scenario.h"
#include "sim/rank_classes.h"

#include <string>

namespace overlapsim::sim {

struct CollectiveTiming {
  CollectiveOp op = CollectiveOp::all_reduce;
  double size_bytes = 0; // nccl-tests' size: the full array (all-gather: the gathered output)
  int workers = 0;
  std::string algorithm; // the one that ran, e.g. "ring/fused"
  double time_s = 0;     // from the common start until the last rank finishes
  double algbw_Bps = 0;  // size / time
  double busbw_Bps = 0;  // algbw x the op's bus factor
};

// Simulates one `op` of `size_bytes` over every GPU of the scenario's cluster, with its
// cluster.collective_algorithm and cluster.collectives settings. CollectiveOp::send stands for
// nccl-tests' sendrecv_perf: every rank sends `size_bytes` to the next rank and receives as much
// from the previous one at once (busbw = algbw).
// The ranks time_collective simulates: one node's for all where the op is symmetric (rank
// classes, sim/rank_classes.h), every rank otherwise.
RankClasses collective_rank_classes(const scenario::Scenario& scenario, CollectiveOp op);

CollectiveTiming time_collective(const scenario::Scenario& scenario, CollectiveOp op,
                                 double size_bytes);

} // namespace overlapsim::sim
