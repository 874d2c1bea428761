// NCCL's tree all-reduce under Simple as the chunk pipeline it runs across nodes (NVIDIA/nccl, our
// own code; issue 66). src/device/all_reduce.h, runTreeSplit: each channel takes S / channels of
// the array and walks it in chunks; a GPU forwards a chunk up the tree (reducing) only once all of
// it has arrived, and the broadcast half forwards it down the same way (Simple posts a step when
// its whole slice is written: ProtoSimple<1, 1>, one step a chunk). The path is the chain inside
// every node and the tree's levels between nodes, 2 (g - 1 + d) stages (g GPUs a node, d the
// deeper tree's depth, nccl_tree_depth), so the first chunk crosses all of them alone and each
// later one only the slowest stage, whose rate is the steady algbw the model prices:
//
//     T = latency + fill + (S - channels x c1) / algbw,
//     fill = 2 (g - 1) c1 / R_nvlink + 2 d c1 x channels x fill_load / (0.92 B_net)
//
// with c1 = min(chunk, S / channels) the first chunk, R_nvlink one channel's rate over NVLink
// (ncclTopoNVLinkBw, as NCCL's p2p channel; comm/nccl_p2p.h) and the NIC stage the node's NICs
// carrying the reduce phase's chunks (nccl_tree_fill_load: 0.5 of the channels on 2 nodes, each
// NIC sending one tree's chunk while it receives the other's). The chunk: enqueue.cc,
// calcCollChunking, stepSize = NCCL_BUFFSIZE / NCCL_STEPS (4 MiB / 8 = 512 KiB by default, 1 MiB
// under GCP's TCPXO profile's 8 MiB), which NCCL 2.21-2.29 cut for LL128 trees, NVLS, NVLSTree
// and CollNet only, never for a Simple tree. The channels: comm->nChannels (twice the topology
// search's, nccl_tree_channels), fewer while S < channels x 512 threads x 64 B
// (NCCL_SIMPLE_THREAD_THRESHOLD; enqueue.cc, "Ring/Tree channel tuning"). NCCL's tuner sees no
// fill (tuning.cc prices a tree as a latency and a bandwidth, with its tree correction for mid
// sizes, which the fill replaces in the run's view).
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// NCCL's default NCCL_BUFFSIZE (init.cc, DEFAULT_BUFFSIZE: 4 MiB) and NCCL_STEPS (device.h: 8).
inline constexpr double kNcclDefaultBuffsize = 4194304;
inline constexpr int kNcclSteps = 8;

// The channels a Simple tree all-reduce of `bytes` runs on.
int nccl_tree_simple_channels(const NcclGeneration& gen, const NcclShape& shape, double bytes);

// The first chunk each channel sends: min(NCCL_BUFFSIZE / NCCL_STEPS, bytes / channels).
double nccl_tree_simple_first_chunk(const NcclGeneration& gen, const NcclShape& shape,
                                    double bytes);

// The first chunk's crossing of every stage (above); 0 on one node or for no bytes.
double nccl_tree_simple_fill_s(const NcclGeneration& gen, const NcclShape& shape, double bytes);

} // namespace overlapsim::comm
