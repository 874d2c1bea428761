// NCCL's one-node NVLS all-reduce as the pipeline it runs (NVIDIA/nccl, our own code; issue 66.3):
// src/device/all_reduce.h, RunWorkColl<AllReduce, NVLS, Simple> with `oneNode`. Each of the
// channels takes S / channels of the array and walks it in loops of heads x chunk (every GPU of
// the node a head); three warp groups work on different loops at once: scatter (each GPU writes
// its loop's data to the heads' NVLS buffers over NVLink), reduce/broadcast (the switch reduces
// with multimem.ld_reduce and multicasts the result back), gather (each GPU reads the reduced
// loop back over NVLink). Steady loops run at NVLS's rate; the first loop finds the pipeline
// empty and crosses all three stages alone, so the run pays two extra stages of one loop over
// the GPU's NVLink: the fill
//
//     fill = 2 L (g-1)/g / B_link,    L = min(S, channels x g x chunk)
//
// (a GPU keeps its own 1/g of the loop). Channels: nvls.cc, NVLS_NCHANNELS_SM90 16,
// NVLS_NCHANNELS_SM100_NVL 24 (sm_100 on one NVLink domain); the chunk: enqueue.cc,
// calcCollChunking for NCCL_ALGO_NVLS, NCCL_NVLS_CHUNKSIZE (128 KiB) cut to 64 KiB below 64,
// to 32 KiB below 8 and to 16 KiB below 2 x channels x heads x chunk. NCCL's tuner knows no fill
// (tuning.cc: NVLS is a latency and a bandwidth), so it is the run's, not the choice's.
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::comm {

// NVLS channels on one node (nvls.cc ncclNvlsTuning): 24 from sm_100, 16 below.
int nccl_nvls_one_node_channels(const NcclGeneration& gen);

// The chunk one NVLS all-reduce of `bytes` on `gpus` GPUs of a node moves per channel and head.
double nccl_nvls_one_node_chunk(const NcclGeneration& gen, int gpus, double bytes);

// The first loop's two extra stages (above) over a GPU's NVLink of `link_Bps`; 0 for no bytes.
double nccl_nvls_one_node_fill_s(const NcclGeneration& gen, int gpus, double link_Bps,
                                 double bytes);

} // namespace overlapsim::comm
