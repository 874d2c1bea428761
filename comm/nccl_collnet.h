// NCCL's CollNet algorithms: the network's switches reduce (InfiniBand SHARP, cluster.fabric's
// `sharp: true`), priced as NCCL's tuner prices them (NVIDIA/nccl src/graph/tuning.cc,
// ncclTopoTuneModel; the algorithms are src/device/all_reduce.h's runAllReduceCollNetDirect /
// runAllReduceCollNetChain and all_gather.h / reduce_scatter.h's CollNetDirect):
//  - CollNetDirect: inside a node every GPU reduce-scatters straight to the node's heads (a GPU
//    with a NIC), each head's NIC sends its part of the array once to the switch, which returns
//    the reduced part, and the heads broadcast it back: a node's NICs carry S each way, where a
//    ring carries 2(n-1)/n S. All-reduce, and all-gather/reduce-scatter where every GPU of a node
//    has a NIC of its own (tuning.cc: "AllGather/ReduceScatter requires 1:1 GPU:NIC").
//  - CollNetChain: a chain through the node's GPUs to one NIC per channel, the switch, back down
//    the chain (all-reduce only).
// Simple only (tuning.cc sets busBw 0 for LL and LL128).
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// NCCL's CollNet latencies (tuning.cc hwLatencies, Simple): CollNetDirect 3.7 us inside a node
// (NVLink and PCI), 31 us across; CollNetChain 2.8 us and 30 us; CollNetDirect's arity
// serialisation, 0.4 us a local rank.
inline constexpr double kCollNetDirectIntraS = 3.7e-6;
inline constexpr double kCollNetDirectNetS = 31e-6;
inline constexpr double kCollNetChainIntraS = 2.8e-6;
inline constexpr double kCollNetChainNetS = 30e-6;
inline constexpr double kCollNetArityS = 0.4e-6;

// The cost of `collective` by CollNetDirect or CollNetChain (`algorithm`) with `protocol` on
// `shape` (latency, algbw and time; time infinite where NCCL would not run it: CollNet not
// enabled, one node, LL/LL128, uneven nodes, all-gather/reduce-scatter with fewer NICs than GPUs
// a node, or by CollNetChain). `bytes` is the whole array (nccl_collective_cost's convention).
//   all-reduce, Direct: latency = launch + 2 (min(1, g-1) x 3.7 us + (g-1) x 0.4 us) + net,
//                       algbw = min(B_in / 2, B_net) x e / f, f = (g/h + 1) / 2 (NCCL's GPU per
//                       NIC factor), e = 0.85 on sm_90 and later (else 1);
//   all-reduce, Chain:  latency = launch + 2 (g-1) x 2.8 us + net, algbw = min(B_in / 2, B_net);
//   all-gather / reduce-scatter, Direct: latency as its all-reduce,
//                       algbw = min(B_in, 0.9 B_net g / h);
// g GPUs and h heads a node, B_in a GPU's intra-node collective bandwidth (B_in / 2: NCCL's
// busBw / 2, the intra-node traffic is about twice the array, sjeaugey in NVIDIA/nccl issue
// #320), B_net the node's NICs, net = max(NCCL's 31 or 30 us, the network's latency) + the
// transport's per-message cost.
NcclCost nccl_collnet_cost(const NcclGeneration& gen, const NcclShape& shape,
                           CollectiveOp collective, NcclAlgorithm algorithm, NcclProtocol protocol,
                           double bytes);

} // namespace overlapsim::comm
