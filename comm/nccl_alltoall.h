// NCCL's all-to-all as NCCL 2.29 runs it (NVIDIA/nccl; our own code). NCCL has no all-to-all
// kernel: nccl-tests' alltoall_perf (and PyTorch's all_to_all) is a group of one ncclSend and one
// ncclRecv per peer, S/n bytes each (S: a rank's whole send buffer, as nccl-tests sizes it), so
// it is priced by NCCL's p2p rules (comm/nccl_p2p.h), every peer's message at once:
//  - channels: each message gets nccl_p2p_channels(S/n): with every rank a peer, "one channel
//    per operation" (src/enqueue.cc, scheduleP2pTasksToPlan: the per-peer minimum halved while
//    it x ranks exceeds the communicator's p2p channels), doubled while a channel's part is above
//    the largest part (addP2pToPlan); the protocol LL while the message is at most channels x
//    NCCL_P2P_LL_THRESHOLD (16 KiB), else Simple;
//  - concurrency: every peer's parts are works in their channels' batches, at most
//    NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8) a batch (src/include/device.h; enqueue.cc's
//    maxConcurrent = p2pnChannels / channels x 8), the works of a batch sharing the channel's
//    warps (src/device/sendrecv.h); n x channels parts over the communicator's p2p channels P
//    (nccl_p2p_comm_channels: 32 on one node) need ceil(n c / (P x 8)) rounds of batches, each
//    paying a hop's latency;
//  - rates: the g-1 peers on the node share the GPU's NVLink (at most their channels x one
//    NVLink's rate, ncclTopoNVLinkBw), the n-g peers on other nodes the GPU's own NICs (its rail:
//    NCCL's net transport uses the NICs local to the GPU; at most their channels x
//    NCCL_P2P_PER_CHANNEL_NET_BW), both at the protocol's share; the two run at once on their own
//    channels, so the slower ends it.
//
//   T = launch + rounds x hop + max((g-1) b / R_in, (n-g) b / R_net),  b = S / n
//   R_in  = min(B_intra, (g-1) c r_nvlink) x share[p]
//   R_net = min(B_gpu_net, (n-g) c 14 GB/s) x share[p]
//
// hop: NCCL's p2p hop (comm/nccl_p2p.h): inside a node the ring's per-step latency, across nodes
// the network's hop and the transport's per-message cost.
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// NCCL_MAX_DEV_WORK_P2P_PER_BATCH (src/include/device.h): p2p works a channel runs at once.
inline constexpr int kNcclP2pWorksPerBatch = 8;

struct NcclAllToAllCost {
  int channels = 1; // a peer message's
  NcclProtocol protocol = NcclProtocol::simple;
  int rounds = 1; // of batches
  double latency_s = 0;
  double intra_s = 0; // the node's peers' bytes over their rate
  double net_s = 0;   // the other nodes' peers' bytes over the GPU's NICs
  double time_s = 0;
};

// An all-to-all of a `bytes` send buffer a rank (S/n to every rank, itself included) over
// `shape`'s communicator.
NcclAllToAllCost nccl_all_to_all_cost(const NcclGeneration& gen, const NcclShape& shape,
                                      double bytes);

// What ran, as traces and `overlapsim collective` name it: "p2p/LL", "p2p/Simple" (static
// strings: the simulator's CollectiveOutcome holds the pointer).
const char* nccl_all_to_all_label(NcclProtocol protocol);

} // namespace overlapsim::comm
