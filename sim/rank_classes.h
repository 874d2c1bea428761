// Rank classes (issue 29): which ranks a simulation runs. Without jitter or WAN sites (a
// straggler's node runs as itself, below), and with an algorithm whose ranks all run the same ops
// and meet only in collectives (Algorithm::node_symmetric), every node does what every other node
// does at the same time: the GPUs of one node (the representatives, one per class "GPU p of any
// node") are simulated, on a platform holding only that node's links (sim/platform.h, folded), and
// stand for all.
//
// Why that is exact and not an estimate: a collective's flows are the same on every node up to
// a shift of the node numbers (rings, NVLS, the hierarchical phases, same-position groups), so
// max-min sharing gives a flow from node n the rate of its shifted copy from the representative
// node. The folded platform routes the representative node's outgoing flows out through its NIC
// and back in through the same NIC to the same-position GPU: each of its links then carries the
// flows that cross it in the full cluster (one per shifted copy), and the solve is the full
// one's. NCCL's trees are not shift-alike (a root has one child); the representative is the
// node the two trees load most, so its NIC sees the busiest node's traffic.
//
// A straggler's node runs too, folded onto its own links the same way: a fused collective's flows
// start together on every node however late its members arrive, so the traffic each node's
// links carry is still its shifted copy's; only its GPUs' timelines differ, and those it runs.
#pragma once

#include "algorithms/algorithm.h"
#include "scenario/scenario.h"

#include <string>
#include <vector>

namespace overlapsim::sim {

struct RankClasses {
  bool folded = false; // false: every rank simulated ("full")
  int node = 0;        // folded: the representative node of the alike ones
  int gpus_per_node = 1;
  int world = 1;
  // Folded: per node, whether it runs: the representative, and every node a straggler sets apart
  // (its GPUs are classes of their own).
  std::vector<char> runs;
  std::string why_full; // full: what told the nodes apart
  // Folded where sharing is approximated, and how (a fat tree: "" elsewhere).
  std::string approximation;

  bool simulated(int rank) const {
    return !folded || runs[static_cast<std::size_t>(rank / gpus_per_node)];
  }
  // The simulated rank that stands for `rank` (itself when it runs).
  int representative(int rank) const {
    return simulated(rank) ? rank : node * gpus_per_node + rank % gpus_per_node;
  }
  int simulated_ranks() const;
  // The nodes that run, in order (folded).
  std::vector<int> simulated_nodes() const;
  // For stdout and the summary: "classes (8 of 16384 GPUs simulated)" or "full (one node)".
  std::string describe() const;
};

// `cluster.rank_classes: auto` folds only where at least this many GPUs are left out of the
// simulation. Measured on the default scenario (2 nodes, 6 algorithms, 2 cores): folding 2 x 1
// GPUs saved 0.19 s of 0.46 s, 2 x 2 0.42 s of 0.93 s, 2 x 4 0.64 s of 1.56 s, 2 x 8 1.5 s of
// 3.6 s; below 4 GPUs left out the saving is a fraction of a second and the trace would lose GPUs.
constexpr int kFoldFromGpusLeftOut = 4;

// What in the scenario tells its nodes apart ("" when nothing does).
std::string rank_classes_obstacle(const scenario::Scenario& s);
// The classes a simulation of `algorithm` on `s` uses.
RankClasses choose_rank_classes(const scenario::Scenario& s, const Algorithm& algorithm);

} // namespace overlapsim::sim
