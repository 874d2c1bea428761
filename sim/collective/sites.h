// Collectives over WAN sites (cluster.sites), so that the WAN latency is paid on the steps that
// cross it only, not on every step of a flat ring (issue 25.5): all-reduce as reduce-scatter
// inside each site, all-reduce across the sites among the ranks at the same position, all-gather
// inside each site (2(S-1) crossing steps); reduce-scatter (inside each site, then across) and
// all-gather (its mirror) with S-1 crossing steps, not N-1 (FSDP and ZeRO shard over the whole
// group).
#pragma once

#include "sim/collective/algorithm.h"

namespace overlapsim::sim::collective {

class Sites final : public Algorithm {
public:
  explicit Sites(Fabric& fabric) : fabric_(fabric) {}
  // s.op: all-reduce, reduce-scatter or all-gather, on a group Fabric::site_split cuts.
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  // Reduce-scatter (`bytes` the array) or all-gather (`gather`: `bytes` the shard).
  CollectiveOutcome half_op(int rank, const Scope& s, double bytes, bool gather);
  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
