#include "comm/nccl_alltoall.h"

#include "comm/nccl_p2p.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::comm {

NcclAllToAllCost nccl_all_to_all_cost(const NcclGeneration& gen, const NcclShape& s, double bytes) {
  NcclAllToAllCost c;
  const int n = s.ranks;
  if (n < 2)
    return c;
  const double b = bytes / n; // to each peer
  c.channels = nccl_p2p_channels(gen, s, b);
  // NCCL_P2P_LL_THRESHOLD (enqueue.cc): 16 KiB a channel.
  c.protocol = b <= c.channels * 16384.0 ? NcclProtocol::ll : NcclProtocol::simple;
  const auto p = static_cast<std::size_t>(c.protocol);
  const double share = gen.bandwidth_share[p];
  const bool multi = s.nodes > 1;
  const int g = multi ? std::clamp(s.per_node, 1, n) : n;
  const double peers_in = g - 1, peers_net = n - g;
  if (peers_in > 0) {
    // Inside a node: the GPU's NVLink, at most its peers' channels x one NVLink's rate (0 over
    // PCIe: the link).
    const double cap = gen.p2p_nvlink_channel_Bps > 0
                           ? peers_in * c.channels * gen.p2p_nvlink_channel_Bps
                           : s.intra_Bps;
    c.intra_s = peers_in * b / (std::min(s.intra_Bps, cap) * share);
  }
  if (peers_net > 0) {
    // Across nodes: the GPU's own NICs (a WAN or a slower pooled link bounds them too).
    const double rail = gpu_net_Bps(s);
    const double link = std::min(rail, s.net_Bps > 0 ? s.net_Bps : rail);
    const double cap = peers_net * c.channels * kNcclP2pChannelNetBps;
    c.net_s = peers_net * b / (std::min(link, cap) * share);
  }
  const double hop = multi ? std::max(gen.hop_net_s[p], s.net_latency_s) + gen.net_message_s
                           : std::max(gen.hop_intra_s[p], s.intra_latency_s);
  // Every rank's parts (its own copy included) over the p2p channels, 8 works a batch.
  c.rounds = static_cast<int>(std::ceil(static_cast<double>(n) * c.channels /
                                        (nccl_p2p_comm_channels(gen, s) * kNcclP2pWorksPerBatch)));
  c.latency_s = gen.launch_s + c.rounds * hop;
  c.time_s = c.latency_s + std::max(c.intra_s, c.net_s);
  return c;
}

const char* nccl_all_to_all_label(NcclProtocol protocol) {
  return protocol == NcclProtocol::ll ? "p2p/LL" : "p2p/Simple";
}

} // namespace overlapsim::comm
