// NCCL's NVLSTree all-reduce on a star (NVLS inside the nodes, trees between them), as the flows
// SimGrid runs for an array of 1 byte in place of tree_flows' (which split its bytes by link
// class): one flow each way per tree edge between nodes, no NVLS flows, whose cost NCCL's model
// prices (nccl.h); ~5,100 flows became ~500 on 1,024 GPUs (issue 64.1).
#pragma once

#include "sim/collective/fabric.h"

#include <vector>

namespace overlapsim::sim::collective {

// Replaces `flows` with the aggregated ones and returns true; leaves them and returns false where
// that does not hold (fat trees, WAN sites, under 6 GPUs a node, one node).
bool aggregate_nvls_tree_flows(Fabric& fabric, const Group& g, std::vector<Flow>& flows);

} // namespace overlapsim::sim::collective
