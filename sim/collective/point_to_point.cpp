#include "sim/collective/point_to_point.h"

#include "comm/nccl_p2p.h"

#include <algorithm>

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

CollectiveOutcome PointToPoint::run(int rank, const Scope& s, double bytes, int peer) {
  if (s.op == CollectiveOp::send) {
    message(s, rank, rank, peer, bytes);
    return {bytes, "p2p"};
  }
  message(s, rank, peer, rank, 0);
  return {0, "p2p"};
}

void PointToPoint::message(const Scope& s, int self, int src, int dst, double bytes) {
  const PairKey pair{s.group.id, s.tag, src, dst};
  const std::int64_t k = self == src ? sends_posted_[pair]++ : recvs_posted_[pair]++;
  const std::tuple<int, int, int, int, std::int64_t> key{s.group.id, s.tag, src, dst, k};
  auto& slot = messages_[key];
  if (!slot)
    slot = std::make_shared<Instance>();
  const auto instance = slot;
  if (self == src)
    instance->bytes = bytes;
  if (++instance->arrived < 2) {
    instance->done->acquire();
    return;
  }
  messages_.erase(key);
  // Over TCP a message whose opposite direction carries one starts late (the receiver's notice
  // and the acknowledgements queue behind that data) and ramps up slowly: measured as a delay.
  const Topology& topology = fabric_.topology();
  const std::pair nodes{topology.node_of(src), topology.node_of(dst)};
  const double delay = fabric_.reverse_busy_s(fabric_.link_class(src, dst));
  if (delay > 0 && messages_moving_[{nodes.second, nodes.first}] > 0)
    sg4::this_actor::sleep_for(delay);
  // Under the NCCL model the message moves as NCCL's p2p does (comm/nccl_p2p.h): on its few
  // channels and, across nodes, on the GPU's own NICs. SimGrid 3.32 ignores a host-to-host comm's
  // rate, so the pace is slept: the flow runs at link speed after the time NCCL's plan adds to it
  // (alone it takes NCCL's time; sharing its links, longer).
  if (fabric_.nccl()) {
    const double b = instance->bytes;
    const auto cost = comm::nccl_p2p_cost(fabric_.nccl_generation(), fabric_.nccl_shape(s.group),
                                          nodes.first != nodes.second, b);
    const double alone = fabric_.latency(src, dst) + b / fabric_.bandwidth(src, dst);
    if (cost.time_s > alone)
      sg4::this_actor::sleep_for(cost.time_s - alone);
  }
  ++messages_moving_[nodes];
  fabric_.interfered(s, {src, dst}, [&] {
    std::vector<sg4::CommPtr> comms;
    fabric_.start_flow(src, dst, instance->bytes, comms, true);
    sg4::Comm::wait_all(comms);
  });
  --messages_moving_[nodes];
  instance->done->release();
}

} // namespace overlapsim::sim::collective
