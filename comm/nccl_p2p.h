// NCCL's send/recv (p2p) as NCCL 2.29 runs it (NVIDIA/nccl; our own code): how many channels a
// message gets, which protocol, and what rate those channels reach. One price for every caller:
// nccl-tests' sendrecv_perf (`overlapsim collective --op sendrecv`), pipeline stages' messages and
// the other algorithms' sends in the simulator (sim/collective/point_to_point.cpp), the planners
// through comm/collective_price.h.
//
// Channels (src/graph/paths.cc, ncclTopoGetNchannels / ncclTopoComputeP2pChannels; src/enqueue.cc,
// scheduleP2pTasksToPlan / addP2pToPlan):
//  - the communicator's p2p channels (comm->p2pnChannels): its collective channels rounded up to
//    a power of two: 32 on one NVSwitch node (assumed, kNcclP2pChannels), across nodes
//    nccl_comm_channels (4 with one GPU and its NIC a node, 16 on 8-GPU 8-NIC H100 nodes);
//  - per peer: 2 a NVLink between two GPUs of a node (an NVSwitch node: 2 x 12-18 links, more than
//    the communicator's p2p channels), 2 over PCIe; to a peer on another node, max(the GPU's own
//    NICs, ceil(their GB/s / NCCL_P2P_PER_CHANNEL_NET_BW = 14)); the least over all peers, rounded
//    up to a power of two and at most the communicator's p2p channels; across nodes then halved
//    while per-peer x ceil(ranks / 8) (NCCL_MAX_DEV_WORK_P2P_PER_BATCH) exceeds the p2p channels
//    ("fit all the peers within a single round"): 10 one-GPU nodes, 4 p2p channels: 4 x 2 > 4,
//    2 a peer; 10 x 8 GPUs, 16 p2p channels: 4 x 10 and 2 x 10 > 16, 1 a peer;
//  - per message: a minimum of per-peer halved while it x ranks exceeds the p2p channels ("one
//    channel per operation"), then doubled (up to per-peer) while a channel's part of the message
//    is above the largest part: parts of chunk / 8 to 32 x chunk on one node, chunk / 2 to chunk
//    across nodes, the chunk being NCCL_P2P_NVL_CHUNKSIZE (512 KiB, an all-NVLink node),
//    NCCL_P2P_NET_CHUNKSIZE (128 KiB, several nodes) or NCCL_P2P_PCI_CHUNKSIZE (128 KiB);
//  - protocol: LL while the message is at most channels x NCCL_P2P_LL_THRESHOLD (16 KiB), else
//    Simple.
// Rate: a channel is one thread block copying; NCCL's topology gives a NVLink path 2 channels a
// link of ncclTopoNVLinkBw (src/graph/topo.h: 20.0 GB/s sm_80, 20.6 sm_90, 40.1 sm_100), and over
// the network asks for a channel per 14 GB/s: a channel moves at most that (inside a node: one
// NVLink's worth, an assumption NCCL's own channel counts make), so a message reaches
// min(its link, channels x per-channel rate) x the protocol's share. Across nodes its link is the
// GPU's own NICs (its rail: NCCL's net transport picks the NICs local to the GPU, never the node's
// others), not the node's pooled NICs.
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// The p2p channels of a communicator on one NVSwitch node (comm->p2pnChannels: its collective
// channels rounded up to a power of two). Assumed 32: NCCL's INFO lines on 8-GPU NVSwitch nodes
// print "32 coll channels, ... 32 p2p channels"; the 8 x H100 sendrecv_perf table's steps (4, 8,
// 16, 32 channels from 32 MiB, 128, 256, 512 MiB) are the ones 32 gives.
inline constexpr int kNcclP2pChannels = 32;
// NCCL_P2P_PER_CHANNEL_NET_BW (src/graph/paths.cc): what NCCL counts one p2p channel to carry
// over the network.
inline constexpr double kNcclP2pChannelNetBps = 14e9;

// A GPU's own NICs (its rail) on a node of `gpus_per_node` GPUs and `nics_per_node` NICs of
// `nic_Bps` each: nics / gpus of them, at least one (shared where the node has fewer NICs than
// GPUs: NCCL's netCount for the GPU is then 1, its bandwidth the NIC's).
struct GpuRail {
  int nics = 1;
  double Bps = 0;
};
GpuRail gpu_rail(int nics_per_node, int gpus_per_node, double nic_Bps);
// The network bandwidth one GPU of `shape` reaches on its own NICs (NcclShape::gpu_net_Bps; 0
// there: the node's pooled NICs shared evenly by its GPUs, at least one NIC's worth).
double gpu_net_Bps(const NcclShape& shape);

// A p2p message's plan and price.
struct NcclP2pCost {
  int channels = 1;
  NcclProtocol protocol = NcclProtocol::simple;
  double latency_s = 0;
  double Bps = 0; // the rate its channels reach
  double time_s = 0;
};

// The communicator's p2p channels (comm->p2pnChannels): kNcclP2pChannels on one node; across
// nodes its collective channels (nccl_comm_channels) rounded up to a power of two, at most
// MAXCHANNELS (64).
int nccl_p2p_comm_channels(const NcclGeneration& gen, const NcclShape& shape);
// Channels per peer on `shape`'s communicator (after the multi-node halving).
int nccl_p2p_channels_per_peer(const NcclGeneration& gen, const NcclShape& shape);
// Channels one message of `bytes` gets.
int nccl_p2p_channels(const NcclGeneration& gen, const NcclShape& shape, double bytes);
// One message of `bytes` between two ranks of `shape`'s communicator, on one node or across
// nodes: latency (launch + one step's hop: the ring's per-step latency inside a node, the
// network's hop and the transport's per-message cost across) + bytes / rate.
NcclP2pCost nccl_p2p_cost(const NcclGeneration& gen, const NcclShape& shape, bool across_nodes,
                          double bytes);

} // namespace overlapsim::comm
