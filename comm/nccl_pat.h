// NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23+) all-gather and reduce-scatter, priced as
// NCCL's tuner prices it (NVIDIA/nccl src/graph/tuning.cc; the algorithm is
// src/device/all_gather.h / reduce_scatter.h's runPat* over src/device/primitives' PatAGAlgorithm /
// PatRSAlgorithm): a Bruck-like exchange whose step k goes to the rank 2^k away and carries the
// shards gathered so far, aggregated, so the fixed cost grows with log2(n) where a ring's grows
// with n. NCCL enables it only with one GPU a node (ncclPatEnable: nNodes == nRanks, sm_60 or
// later, host network) and runs it with Simple only.
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// NCCL's PAT constants (tuning.cc): base latency 8 us; the network hop of a one-GPU-a-node
// communicator is the tree's (14 us, Simple), of which PAT pays 1/3.5 a level; a linear
// 2.8 us a rank ("still a linear part"); its bus bandwidth 75% of the channels'.
inline constexpr double kPatBaseS = 8e-6;
inline constexpr double kPatTreeNetS = 14e-6;
inline constexpr double kPatPerRankS = 2.8e-6;
inline constexpr double kPatBandwidthShare = 0.75;

// The cost of an all-gather or reduce-scatter of `bytes` (the whole array) by PAT with
// `protocol` on `shape`:
//   latency = launch + 8 us + floor(log2 n) x net / 3.5 + n x 2.8 us,
//   algbw   = 0.75 x B_net x Simple's share (NCCL uses the bus bandwidth as the algorithm's:
//             no (n-1)/n for PAT),
// net = max(14 us, the network's latency) + the transport's per-message cost. Infinite time
// where NCCL would not run it: another op, another protocol, more than one GPU a node, a GPU
// below sm_60 (or not NVIDIA's: RCCL has no PAT), one rank.
NcclCost nccl_pat_cost(const NcclGeneration& gen, const NcclShape& shape, CollectiveOp collective,
                       NcclProtocol protocol, double bytes);

} // namespace overlapsim::comm
