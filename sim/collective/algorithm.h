// The one interface of the simulator's collective algorithms (as ASTRA-sim's
// system/collective/Algorithm.hh): each algorithm is a class of its own file (ring.h, chain.h,
// tree.h, nccl.h, hierarchical.h, sites.h, all_to_all.h, point_to_point.h) that runs one rank's
// part of a collective over the Fabric it was built with; Network (network.h) picks which one runs
// each call. What a collective costs in closed form is comm/'s; an algorithm only moves the flows
// (and sleeps the latencies) that make SimGrid's network give that cost, or longer where flows
// share links.
#pragma once

#include "sim/collective/fabric.h"

namespace overlapsim::sim::collective {

class Algorithm {
public:
  virtual ~Algorithm() = default;
  // Runs rank `rank`'s part of the collective `s` (s.op says which), blocking the calling actor
  // until it is done. `bytes` follows the runtime's convention (NCCL's count): the full array for
  // all-reduce, reduce-scatter, broadcast, reduce and all-to-all, the shard for all-gather, the
  // message for send; `root` is broadcast's and reduce's root, send's and recv's peer.
  virtual CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) = 0;
};

} // namespace overlapsim::sim::collective
