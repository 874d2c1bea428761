// Rank classes (issue 29): which ranks a simulation runs. Without stragglers, jitter or WAN
// sites, and with an algorithm whose ranks all run the same ops and meet only in collectives
// (Algorithm::node_symmetric), every node does what every other node does at the same time:
// the GPUs of one node (the representatives, one per class "GPU p of any node") are simulated,
// on a platform holding only that node's links (sim/platform.h, folded), and stand for all.
//
// Why that is exact and not an estimate: a collective's flows are the same on every node up to
// a shift of the node numbers (rings, NVLS, the hierarchical phases, same-position groups), so
// max-min sharing gives a flow from node n the rate of its shifted copy from the representative
// node. The folded platform routes the representative node's outgoing flows out through its NIC
// and back in through the same NIC to the same-position GPU: each of its links then carries the
// flows that cross it in the full cluster (one per shifted copy), and the solve is the full
// one's. NCCL's trees are not shift-alike (a root has one child); the representative is the
// node the two trees load most, so its NIC sees the busiest node's traffic.
#pragma once

#include "algorithms/algorithm.h"
#include "scenario/scenario.h"

#include <string>

namespace overlapsim::sim {

struct RankClasses {
  bool folded = false;   // false: every rank simulated ("full")
  int node = 0;          // folded: the representative node
  int gpus_per_node = 1; // classes when folded
  int world = 1;
  std::string why_full; // full: what told the nodes apart

  bool simulated(int rank) const { return !folded || rank / gpus_per_node == node; }
  // The simulated rank that stands for `rank` (itself when every rank runs).
  int representative(int rank) const {
    return folded ? node * gpus_per_node + rank % gpus_per_node : rank;
  }
  int simulated_ranks() const { return folded ? gpus_per_node : world; }
  // For stdout and the summary: "classes (8 of 16384 GPUs simulated)" or "full (one node)".
  std::string describe() const;
};

// What in the scenario tells its nodes apart ("" when nothing does).
std::string rank_classes_obstacle(const scenario::Scenario& s);
// The classes a simulation of `algorithm` on `s` uses.
RankClasses choose_rank_classes(const scenario::Scenario& s, const Algorithm& algorithm);

} // namespace overlapsim::sim
