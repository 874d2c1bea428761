#include "comm/nccl_p2p.h"

#include "comm/nccl_channels.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::comm {

namespace {

int pow2_up(int v) {
  int p = 1;
  while (p < v)
    p *= 2;
  return p;
}

// NCCL_P2P_NVL_CHUNKSIZE / NCCL_P2P_NET_CHUNKSIZE / NCCL_P2P_PCI_CHUNKSIZE (src/init.cc,
// computeBuffSizes): several nodes take the network's, one all-NVLink node NVLink's.
double p2p_chunk(const NcclGeneration& gen, const NcclShape& s) {
  if (s.nodes > 1)
    return 131072;
  return gen.p2p_nvlink_channel_Bps > 0 ? 524288 : 131072;
}

} // namespace

double gpu_net_Bps(const NcclShape& s) {
  if (s.gpu_net_Bps > 0)
    return s.gpu_net_Bps;
  const int nics = std::max(1, s.net_nics > 0 ? s.net_nics : s.net_heads);
  return s.net_Bps / nics * std::max(1, nics / std::max(1, s.per_node));
}

GpuRail gpu_rail(int nics_per_node, int gpus_per_node, double nic_Bps) {
  const int nics = std::max(1, nics_per_node / std::max(1, gpus_per_node));
  return {nics, nics * nic_Bps};
}

int nccl_p2p_comm_channels(const NcclGeneration& gen, const NcclShape& s) {
  // paths.cc, ncclTopoComputeP2pChannels: p2pnChannels = pow2Up(min(comm->nChannels,
  // NCCL_MAX_P2P_NCHANNELS = MAXCHANNELS)).
  return s.nodes > 1 ? std::min(pow2_up(nccl_comm_channels(gen, s)), 64) : kNcclP2pChannels;
}

int nccl_p2p_channels_per_peer(const NcclGeneration& gen, const NcclShape& s) {
  const int total = nccl_p2p_comm_channels(gen, s);
  // Inside a node: 2 a NVLink, and an NVSwitch node's 12-18 links give more than the
  // communicator has; 2 over PCIe (paths.cc).
  int per_peer = gen.p2p_nvlink_channel_Bps > 0 ? total : 2;
  if (s.nodes > 1) {
    // A peer on another node: at least one a NIC, more to carry the NICs at 14 GB/s a channel.
    const int nics = std::max(1, s.gpu_nics);
    const int net =
        std::max(nics, static_cast<int>(std::ceil(gpu_net_Bps(s) / kNcclP2pChannelNetBps - 1e-9)));
    per_peer = s.per_node > 1 ? std::min(per_peer, net) : net;
  }
  per_peer = pow2_up(per_peer);
  if (s.nodes > 1) {
    // ncclTopoComputeP2pChannels: the network is the bottleneck; keep every peer within one round
    // of NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8) peers a channel.
    const int batches = (s.ranks + 7) / 8;
    while (per_peer * batches > total && per_peer > 1)
      per_peer /= 2;
  }
  return std::min(per_peer, total);
}

int nccl_p2p_channels(const NcclGeneration& gen, const NcclShape& s, double bytes) {
  const int per_peer = nccl_p2p_channels_per_peer(gen, s);
  if (bytes <= 0)
    return 1;
  // scheduleP2pTasksToPlan: one channel per operation when every rank talks to every other.
  const int total = nccl_p2p_comm_channels(gen, s);
  int least = per_peer;
  while (least * s.ranks > total && least > 1)
    least /= 2;
  // addP2pToPlan: parts between min_part and max_part bytes a channel.
  const double chunk = p2p_chunk(gen, s);
  const double min_part = s.nodes > 1 ? chunk / 2 : chunk / 8;
  const double max_part = s.nodes > 1 ? chunk : chunk * 32;
  int channels =
      std::max(1, static_cast<int>(std::min<double>(least, std::ceil(bytes / min_part))));
  double part = std::max(min_part, std::ceil(bytes / channels));
  while (part > max_part && channels <= per_peer / 2) {
    channels *= 2;
    part = std::ceil(bytes / channels);
  }
  return channels;
}

NcclP2pCost nccl_p2p_cost(const NcclGeneration& gen, const NcclShape& s, bool across_nodes,
                          double bytes) {
  NcclP2pCost c;
  c.channels = nccl_p2p_channels(gen, s, bytes);
  // NCCL_P2P_LL_THRESHOLD (enqueue.cc): 16 KiB a channel.
  c.protocol = bytes <= c.channels * 16384.0 ? NcclProtocol::ll : NcclProtocol::simple;
  const auto p = static_cast<std::size_t>(c.protocol);
  double link = 0, per_channel = 0, hop = 0;
  if (across_nodes) {
    link = std::min(gpu_net_Bps(s), s.net_Bps > 0 ? s.net_Bps : gpu_net_Bps(s)); // or a WAN
    per_channel = kNcclP2pChannelNetBps;
    hop = std::max(gen.hop_net_s[p], s.net_latency_s) + gen.net_message_s;
  } else {
    link = s.intra_Bps;
    per_channel = gen.p2p_nvlink_channel_Bps; // 0 over PCIe: the link
    hop = std::max(gen.hop_intra_s[p], s.intra_latency_s);
  }
  c.Bps =
      (per_channel > 0 ? std::min(link, c.channels * per_channel) : link) * gen.bandwidth_share[p];
  c.latency_s = gen.launch_s + hop;
  c.time_s = c.latency_s + (c.Bps > 0 ? bytes / c.Bps : 0);
  return c;
}

} // namespace overlapsim::comm
