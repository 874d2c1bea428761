#include "sim/collective/all_to_all.h"

#include "comm/ring_shape.h"

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

CollectiveOutcome AllToAll::run(int rank, const Scope& s, double bytes, int /*root*/) {
  const Group& g = s.group;
  const int n = g.size();
  if (!fabric_.platform().nics.empty()) {
    // A fat tree routes between NICs, not GPUs (Platform::lane): every pair's flow at once.
    fabric_.fused(s, 0, [&] {
      std::vector<Flow> flows;
      for (int a : g.ranks)
        for (int b : g.ranks)
          if (a != b)
            flows.push_back({a, b, bytes / n});
      return flows;
    });
    return {comm::ring_bytes_sent(CollectiveOp::all_to_all, n, bytes), "direct"};
  }
  std::vector<sg4::CommPtr> comms;
  for (int peer : g.ranks) {
    if (peer == rank)
      continue;
    comms.push_back(fabric_.mailbox(s, rank, peer)
                        ->put_async(&payload_token, static_cast<std::uint64_t>(bytes / n)));
    comms.push_back(fabric_.mailbox(s, peer, rank)->get_async<char>(&payload_sink));
  }
  sg4::Comm::wait_all(comms);
  return {comm::ring_bytes_sent(CollectiveOp::all_to_all, n, bytes), "direct"};
}

} // namespace overlapsim::sim::collective
