// Ring algorithms as flows to the next rank of the group: all-reduce is 2(N-1) steps of S/N,
// reduce-scatter and all-gather N-1 (comm/ring_shape.h states the steps of every op), a barrier a
// ring of empty messages. `steps` fidelity: every step its own flow (exact, slow at scale); fused:
// the latencies of all steps but the last are slept, then one flow per sender carries all its
// steps' bytes (equal to `steps` when one bottleneck paces the ring: tests/collectives_test.cpp).
#pragma once

#include "sim/collective/algorithm.h"

namespace overlapsim::sim::collective {

// `steps` ring steps of `chunk` bytes each over s.group (the phases of the two-level all-reduces
// are rings of this kind too: hierarchical.h, sites.h).
CollectiveOutcome ring_steps(Fabric& fabric, int rank, const Scope& s, int steps, double chunk);

class Ring final : public Algorithm {
public:
  explicit Ring(Fabric& fabric) : fabric_(fabric) {}
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
