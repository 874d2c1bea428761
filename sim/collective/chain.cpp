#include "sim/collective/chain.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

CollectiveOutcome Chain::run(int rank, const Scope& s, double bytes, int root) {
  const bool reduce = s.op == CollectiveOp::reduce;
  const Group& g = s.group;
  const int n = g.size();
  const int r = g.index_of(root);
  auto distance = [&](int index) { return (index - r + n) % n; };
  // Broadcast: root -> ... -> root-1 (the last does not send). Reduce: root+1 -> ... -> root.
  auto sends = [&](int index) { return reduce ? distance(index) != 0 : distance(index) != n - 1; };
  auto receives = [&](int index) { return reduce ? distance(index) != 1 : distance(index) != 0; };
  const int i = g.index_of(rank);
  if (fabric_.steps()) {
    // C chunks, each forwarded as soon as it has arrived: (n-2+C) chunk steps of alpha + S/(C B).
    // C = sqrt((n-2) S / (B alpha)) minimises that; the fused form is its limit with free latency
    // pipelining, so the two differ by about (n-2+C) alpha + (n-2) S / (C B).
    const int next = g.ranks[static_cast<std::size_t>((i + 1) % n)];
    const int prev = g.ranks[static_cast<std::size_t>((i + n - 1) % n)];
    const double alpha = std::max(fabric_.ring_max_latency(g), 1e-9);
    const int chunks =
        std::clamp(static_cast<int>(std::sqrt(std::max(1, n - 2) * bytes /
                                              (fabric_.ring_min_bandwidth(g) * alpha))),
                   1, 4096);
    sg4::CommPtr pending;
    for (int k = 0; k < chunks; ++k) {
      if (receives(i))
        fabric_.mailbox(s, prev, rank)->get<char>();
      if (sends(i)) {
        if (pending)
          pending->wait();
        pending = fabric_.mailbox(s, rank, next)
                      ->put_async(&payload_token, static_cast<std::uint64_t>(bytes / chunks));
      }
    }
    if (pending)
      pending->wait();
    return {sends(i) ? bytes : 0.0, "ring/steps"};
  }
  fabric_.fused(s, (n - 2) * fabric_.ring_max_latency(g), [&] {
    std::vector<Flow> flows;
    for (int k = 0; k < n; ++k)
      if (sends(k))
        flows.push_back({g.ranks[static_cast<std::size_t>(k)],
                         g.ranks[static_cast<std::size_t>((k + 1) % n)], bytes});
    return flows;
  });
  return {sends(i) ? bytes : 0.0, "ring/fused"};
}

} // namespace overlapsim::sim::collective
