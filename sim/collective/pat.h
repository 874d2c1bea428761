// NCCL's PAT all-gather and reduce-scatter on the simulated platform (comm/nccl_pat.h prices
// it; NVIDIA/nccl src/device/all_gather.h / reduce_scatter.h, runPatAG / runPatRS, over
// PatAGAlgorithm / PatRSAlgorithm in src/device/primitives.h): Bruck-like, step k exchanges with
// the rank 2^k away and carries the shards gathered so far, min(2^k, n - 2^k) of them (one GPU a
// node, so every flow crosses the network). Over all steps a rank sends n-1 shards, (n-1)/n S, as
// a ring does, in log2(n) messages instead of n-1.
#pragma once

#include "sim/collective/fabric.h"

#include <vector>

namespace overlapsim::sim::collective {

// The flows of one PAT all-gather or reduce-scatter of an S-byte array (`bytes`) over `g`:
// rank i sends min(2^k, n - 2^k) S / n to rank i + 2^k (mod n) for each 2^k < n.
std::vector<Flow> pat_flows(const Group& g, double bytes);

} // namespace overlapsim::sim::collective
