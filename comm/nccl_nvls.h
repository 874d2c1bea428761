// NCCL's NVLS beyond the one-node all-reduce (which comm/nccl_model.cpp prices with NVLSTree),
// priced as NCCL's tuner prices it (NVIDIA/nccl src/graph/tuning.cc; the algorithms are
// src/device/all_gather.h / reduce_scatter.h's runNvls and all_reduce.h's
// runAllReduceNvls with CollNet between nodes):
//  - all-gather and reduce-scatter by NVLink SHARP (NCCL 2.18+): the switch multicasts a
//    GPU's shard to every GPU (all-gather) or reduces the shards on their way to their owner
//    (reduce-scatter); one node, or across nodes with CollNet (the fabric's SHARP, cluster.fabric
//    `sharp: true`) and a NIC per GPU (tuning.cc: "AllGather/ReduceScatter requires 1:1 GPU:NIC");
//  - all-reduce across nodes with CollNet (NCCL's NVLS algorithm on several nodes: NVLink SHARP
//    inside each node, the fabric's SHARP between nodes), Simple only.
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// NVLS's network latency (tuning.cc hwLatencies, NET, NVLS Simple): 18 us.
inline constexpr double kNvlsNetS = 18e-6;

// The cost of `collective` by `algorithm` on `shape` where this file owns it: `nvls`, all-gather
// and reduce-scatter on one node; `nvls_collnet`, all-reduce, all-gather and reduce-scatter
// across nodes (infinite time where NCCL would not run it).
// With X = NVLS's bus bandwidth / 2 (tuning.cc's nChannels x bwIntra x nvlsEfficiency x
// (nChannels-1)/nChannels, which an all-reduce doubles: "AllReduce pipelines two operations",
// so the measured all-reduce bus bandwidth is 2 X):
//   all-gather / reduce-scatter: algbw = min(X (g-1)/g, B_net) (B_net across nodes only; NCCL
//                                uses the bus bandwidth as the algorithm's here),
//   all-reduce across nodes:     algbw = min(2 X, B_net) n / (2 (n-1)), at most B_in,
//   latency = launch + NVLS's 25 us (+ max(18 us, the network's latency) + the transport's
//             per-message cost across nodes),
// g GPUs a node, n ranks, B_net the node's NICs, B_in a GPU's intra-node link.
NcclCost nccl_nvls_cost(const NcclGeneration& gen, const NcclShape& shape, CollectiveOp collective,
                        NcclAlgorithm algorithm, NcclProtocol protocol, double bytes);

} // namespace overlapsim::comm
