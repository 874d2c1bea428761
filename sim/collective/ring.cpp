#include "sim/collective/ring.h"

#include "comm/ring_shape.h"

namespace overlapsim::sim::collective {

CollectiveOutcome ring_steps(Fabric& fabric, int rank, const Scope& s, int steps, double chunk) {
  const Group& g = s.group;
  const int n = g.size();
  if (fabric.steps()) {
    const int i = g.index_of(rank);
    const int next = g.ranks[static_cast<std::size_t>((i + 1) % n)];
    const int prev = g.ranks[static_cast<std::size_t>((i + n - 1) % n)];
    for (int k = 0; k < steps; ++k)
      fabric.exchange(s, rank, next, chunk, prev);
    return {chunk * steps, "ring/steps"};
  }
  // Each step waits for the slowest hop, so the steps but the last cost its latency; the last is
  // paid by the flows themselves.
  fabric.fused_ring(s, (steps - 1) * fabric.ring_max_latency(g), chunk * steps);
  return {chunk * steps, "ring/fused"};
}

CollectiveOutcome Ring::run(int rank, const Scope& s, double bytes, int /*root*/) {
  // The ring's steps and what each carries, as comm/ring_shape.h states them for s.op, on the
  // whole array (all-gather's is n shards); a barrier moves nothing.
  const double array =
      s.op == CollectiveOp::barrier ? 0.0 : comm::array_bytes(s.op, s.group.size(), bytes);
  const comm::RingShape r = comm::ring_shape(s.op, s.group.size());
  return ring_steps(fabric_, rank, s, static_cast<int>(r.steps),
                    r.steps > 0 ? r.bus_factor * array / r.steps : 0.0);
}

} // namespace overlapsim::sim::collective
