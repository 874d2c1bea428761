// Two-level all-reduce: reduce-scatter inside each node, all-reduce of the shard across the nodes
// (the "replication group" of GPUs with the same local index), all-gather inside the node; three
// rings (ring.h) in a row, each phase's bytes counted on the link class it crossed.
#pragma once

#include "sim/collective/algorithm.h"

namespace overlapsim::sim::collective {

// The three ring phases over `sp`'s intra groups (reduce-scatter, all-gather) and cross groups
// (all-reduce); sites.h runs the same over WAN sites.
CollectiveOutcome two_level_all_reduce(Fabric& fabric, int rank, const Scope& s, double bytes,
                                       const Split& sp, const char* label_fused,
                                       const char* label_steps);

class Hierarchical final : public Algorithm {
public:
  explicit Hierarchical(Fabric& fabric) : fabric_(fabric) {}
  // s.op: all-reduce, on a group that splits evenly over nodes (Fabric::split).
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
