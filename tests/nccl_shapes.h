// Shapes and generations the NCCL model's tests price by hand: HGX H100 nodes (8 GPUs on NVLink 4,
// 8 x 400 Gb/s InfiniBand a node, one NIC a GPU).
#pragma once

#include "comm/nccl_model.h"

namespace overlapsim::nccl_test {

inline comm::NcclGeneration hopper() {
  return comm::nccl_generation(*hw::find_gpu_preset("h100-sxm"), *hw::find_link_preset("nvlink4"),
                               8);
}

inline comm::NcclShape h100_nodes(int nodes, int per_node) {
  comm::NcclShape s;
  s.nodes = nodes;
  s.per_node = per_node;
  s.ranks = nodes * per_node;
  s.intra_Bps = 360e9; // nvlink4: 450 GB/s x 0.80
  s.intra_latency_s = 1e-6;
  if (nodes > 1) {
    s.net_Bps = 8 * 50e9; // 8 x 400 Gb/s pooled
    s.net_latency_s = 3e-6;
    s.net_nics = s.net_heads = 8;
    s.gpu_nics = 1;
    s.gpu_net_Bps = 50e9;
  }
  return s;
}

} // namespace overlapsim::nccl_test
