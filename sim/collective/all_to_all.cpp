#include "sim/collective/all_to_all.h"

#include "comm/nccl_alltoall.h"
#include "comm/nccl_p2p.h"
#include "comm/ring_shape.h"

#include <algorithm>
#include <vector>

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

CollectiveOutcome AllToAll::run(int rank, const Scope& s, double bytes, int /*root*/) {
  const Group& g = s.group;
  const int n = g.size();
  const double sent = comm::ring_bytes_sent(CollectiveOp::all_to_all, n, bytes);
  if (fabric_.nccl())
    return {sent, run_nccl(s, bytes)};
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
    return {sent, "direct"};
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
  return {sent, "direct"};
}

const char* AllToAll::run_nccl(const Scope& s, double bytes) {
  const Group& g = s.group;
  const comm::NcclShape& shape = fabric_.nccl_shape(g);
  const comm::NcclAllToAllCost cost =
      comm::nccl_all_to_all_cost(fabric_.nccl_generation(), shape, bytes);
  fabric_.fused_plan(s, [&] {
    const int n = g.size();
    const double b = bytes / n;
    std::vector<Flow> flows;
    double route = 0;
    const Platform& platform = fabric_.platform();
    for (int a : g.ranks)
      for (int peer : g.ranks)
        if (peer != a) {
          flows.push_back({a, peer, b});
          route = std::max(route, fabric_.latency(a, peer));
        }
    // What the flows take alone at link speed: a rank's node peers' bytes over its intra-node
    // link, the other nodes' over its own NICs (the shape's rates, as the price has them).
    const int per_node = shape.nodes > 1 ? std::clamp(shape.per_node, 1, n) : n;
    const double unpaced =
        std::max(shape.intra_Bps > 0 ? (per_node - 1) * b / shape.intra_Bps : 0.0,
                 n > per_node ? (n - per_node) * b / comm::gpu_net_Bps(shape) : 0.0);
    const double transfer = cost.time_s - cost.latency_s;
    // Folded on an oversubscribed fat tree: no shorter than the busiest leaf's uplinks allow.
    const double uplinks = platform.nics.empty() ? 0.0 : fabric_.uplink_time(flows);
    // Only the flows that run: all, or the representative node's (sim/rank_classes.h).
    std::erase_if(flows, [&](const Flow& f) { return !platform.classes.simulated(f.src); });
    return Fabric::Plan{std::max(0.0, cost.latency_s - route) + std::max(0.0, transfer - unpaced) +
                            std::max(0.0, uplinks - std::max(transfer, unpaced)),
                        std::move(flows)};
  });
  return comm::nccl_all_to_all_label(cost.protocol);
}

} // namespace overlapsim::sim::collective
