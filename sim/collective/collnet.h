// NCCL's CollNet on the simulated platform (comm/nccl_collnet.h prices it; NVIDIA/nccl
// src/device/all_reduce.h, runAllReduceCollNetDirect / runAllReduceCollNetChain): the switch
// reduces, so a node's NICs carry the array S once each way, where a ring carries 2(n-1)/n S.
// The star platform has no host in the switch to reduce, so the flows stand in for that load: a
// ring over the nodes, each GPU sending its 1/g share of S to the GPU of the same position on the
// next node (a node's NICs: S out, S in). What the NVLink steps inside the node cost the model
// prices (comm/nccl_collnet.h); the flows load the links other traffic shares.
#pragma once

#include "sim/collective/fabric.h"

#include <vector>

namespace overlapsim::sim::collective {

// The flows of one CollNet collective of `bytes` over `g` (nodes holding equal shares; one node
// or uneven: none, CollNet does not run there).
std::vector<Flow> collnet_flows(Fabric& fabric, const Group& g, double bytes);

} // namespace overlapsim::sim::collective
