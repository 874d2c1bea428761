// The channels NCCL 2.29 gives a communicator across nodes (NVIDIA/nccl; our own code): what its
// topology search finds over the NICs (src/graph/search.cc) and what connect.cc makes of them
// (ncclTopoPostset). The tree's channels (nccl_tree_channels, nccl_model.h) and the p2p channels
// (comm/nccl_p2p.h: the communicator's channels rounded up to a power of two) ask it.
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// A graph across nodes whose channels go through `nics` NICs of `per_nic_Bps` each (search.cc):
// one channel a NIC, or as many as NCCL's top channel speed (48 GB/s, speedArrayInter) fits in a
// faster NIC; doubled (ncclTopoDupChannels) where a channel runs at 25 GB/s or more, except on
// GPUs above sm_80 with channels below 50 GB/s and more than 4 of them, each duplicate at half
// the speed (bwIntra /= 2). At most MAXCHANNELS / 2 (32).
struct NcclSearchedChannels {
  int channels = 1;
  double channel_Bps = 0; // the graph's bwIntra after the duplication
};
NcclSearchedChannels nccl_search_channels(const NcclGeneration& gen, int nics, double per_nic_Bps);

// The communicator's collective channels across nodes (comm->nChannels): the ring search's
// channels over the NICs the node's ranks use (at most one a rank: net_heads; a GPU's PCIe link
// carries one 48 GB/s channel), twice (connect.cc, v2.29.2-1 line 452: every searched channel
// duplicated), twice again on sm_90+ where a channel runs above 45 GB/s and there are fewer than
// 16 (line 473). 10 nodes of 1, 2, 4, 8 H100s with a 400 Gb/s NIC each: 4, 8, 16, 16 (NCCL's INFO
// lines: "Channel 00/04" on 2 x 1 GH200, nvidia/nccl #1291; "Channel 00/16" on 2-3 x 8 H100,
// #1538 and #1453).
int nccl_comm_channels(const NcclGeneration& gen, const NcclShape& shape);

} // namespace overlapsim::comm
