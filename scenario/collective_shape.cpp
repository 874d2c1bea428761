#include "scenario/collective_shape.h"

#include "comm/nccl_p2p.h"

#include <algorithm>

namespace overlapsim::scenario {

namespace {

// A node of `per_node` ranks on `nodes` nodes with the cluster's links; across the WAN when
// `wan` is set (the route then crosses both sites' WAN links: sim/platform.cpp).
comm::NcclShape shape_of(const ClusterSpec& c, int nodes, bool wan, int per_node) {
  comm::NcclShape s;
  s.nodes = nodes;
  s.per_node = per_node;
  s.ranks = nodes * per_node;
  const bool multi_gpu = c.gpus_per_node > 1;
  // One GPU a node has no intra-node link (sim/platform.cpp gives it an unlimited one).
  s.intra_Bps = multi_gpu ? c.intra_node.bandwidth_Bps : 1e15;
  s.intra_latency_s = multi_gpu ? c.intra_node.latency_s : 0.0;
  if (nodes > 1) {
    // The route between two nodes' GPUs: both GPU links, both nodes' pooled NICs (a fat tree
    // routes each GPU to one NIC's port: the node's GPUs use min(NICs, GPUs) of them).
    const double nic_Bps =
        c.fabric.topology == hw::FabricSpec::Topology::fat_tree
            ? c.inter_node.bandwidth_Bps * std::min(c.nics_per_node, c.gpus_per_node)
            : c.inter_node.bandwidth_Bps * c.nics_per_node;
    s.net_Bps = std::min(s.intra_Bps, nic_Bps);
    s.net_latency_s = std::max(c.inter_node.latency_s, s.intra_latency_s);
    if (wan) {
      s.net_Bps = std::min(s.net_Bps, c.wan.bandwidth_Bps);
      s.net_latency_s += c.wan.latency_s;
    }
    s.net_heads = std::min(per_node, c.nics_per_node);
    // Every NIC the node's ranks use (a fat tree routes each GPU to one NIC's port).
    s.net_nics = c.fabric.topology == hw::FabricSpec::Topology::fat_tree
                     ? std::min(c.nics_per_node, c.gpus_per_node)
                     : c.nics_per_node;
  }
  // A GPU's own NICs: where NCCL's p2p crosses nodes (comm/nccl_p2p.h).
  const comm::GpuRail rail =
      comm::gpu_rail(c.nics_per_node, c.gpus_per_node, c.inter_node.bandwidth_Bps);
  s.gpu_nics = rail.nics;
  s.gpu_net_Bps = rail.Bps;
  return s;
}

} // namespace

comm::NcclShape world_shape(const ClusterSpec& c) {
  return shape_of(c, c.nodes, c.sites.size() > 1, c.gpus_per_node);
}

comm::NcclShape group_shape(const ClusterSpec& c, int nodes, int per_node) {
  return shape_of(c, nodes, false, per_node);
}

comm::SiteShape world_sites(const ClusterSpec& c) {
  comm::SiteShape s;
  if (c.sites.size() <= 1)
    return s;
  s.sites = static_cast<int>(c.sites.size());
  s.site = shape_of(c, static_cast<int>(c.sites.front().nodes.size()), false, c.gpus_per_node);
  s.wan_Bps = c.wan.bandwidth_Bps;
  s.wan_latency_s = c.wan.latency_s + std::max(c.inter_node.latency_s, 0.0);
  return s;
}

comm::NcclGeneration nccl_generation_of(const ClusterSpec& c) {
  // Mixed GPU types (cluster.node_types): NCCL tunes a communicator by the lowest compute
  // capability among its ranks (init.cc's minCompCap, tuning.cc's compCapIndex, NVLS only where
  // every GPU has it): the world's, the lowest of the cluster's GPUs. A GPU of unknown capability
  // (0: a map without compute_capability) leaves the scenario's GPU's.
  const hw::GpuSpec* gpu = &c.gpu;
  for (const auto& type : c.node_types)
    if (c.gpu.compute_capability > 0 && type.gpu.compute_capability > 0 &&
        type.gpu.compute_capability < gpu->compute_capability)
      gpu = &type.gpu;
  comm::NcclGeneration gen =
      comm::nccl_generation(*gpu, c.intra_node, c.gpus_per_node, c.inter_node);
  gen.collnet = c.fabric.sharp;
  return gen;
}

comm::PriceRule price_rule(const ClusterSpec& c) {
  return {c.collectives, c.collective_algorithm, c.nccl_protocol, nccl_generation_of(c)};
}

comm::CollectivePrice price_world_collective(const ClusterSpec& c, CollectiveOp op, double bytes) {
  return comm::price_collective(price_rule(c), world_shape(c), op, bytes, world_sites(c));
}

} // namespace overlapsim::scenario
