// A ring across nodes priced with NCCL's own per-step latencies (tuning.cc, NCCL 2.29:
// NcclGeneration::ring_multi_hop_intra_s, ring_hop_net_s) against hand calculations.
#include "comm/nccl_model.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using comm::NcclAlgorithm;
using comm::NcclProtocol;

// 3 x 8 A100 with 4 x 200 Gb/s HDR a node (nccl-tests issue #119's cluster).
comm::NcclShape three_nodes() {
  comm::NcclShape s;
  s.nodes = 3;
  s.per_node = 8;
  s.ranks = 24;
  s.intra_Bps = 234e9;
  s.intra_latency_s = 1e-6;
  s.net_Bps = 4 * 25e9 * 0.92;
  s.net_latency_s = 1e-6;
  s.net_heads = s.net_nics = 4;
  return s;
}

comm::NcclGeneration ampere() {
  return comm::nccl_generation(*hw::find_gpu_preset("a100-40gb"), *hw::find_link_preset("nvlink3"),
                               8);
}

TEST(NcclRingLatency, AcrossNodesStepsAreNcclsOwn) {
  // 46 steps, 4 across nodes: LL128 12 us launch + 14 base + 42 x 1.9 (NVLink ring LL128) +
  // 4 x 4.0 (network ring LL128) = 121.8 us; LL 12 + 6.6 + 42 x max(0.6, 1 us overhead) +
  // 4 x 2.7 = 71.4 us; Simple (12 + 8.4 + 42 x 3.4 + 4 x 14) x 1.4 (NCCL 2.18+'s plateau on sm_80).
  const auto gen = ampere();
  const auto s = three_nodes();
  const double bytes = 33554432;
  EXPECT_NEAR(
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll128, bytes).latency_s,
      121.8e-6, 1e-12);
  EXPECT_NEAR(comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll, bytes).latency_s,
              71.4e-6, 1e-12);
  EXPECT_NEAR(
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::simple, bytes).latency_s,
      (12 + 8.4 + 42 * 3.4 + 4 * 14) * 1.4e-6, 1e-12);
  // LL128's time: + S x 2(n-1)/n over 92% of the NICs' 92 GB/s.
  const auto t = comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll128, bytes);
  EXPECT_NEAR(t.time_s, 121.8e-6 + bytes * 46 / 24 / (92e9 * 0.92), 1e-12);
}

TEST(NcclRingLatency, OneNodeKeepsItsFitAndOneRankANodeTheTreesNetworkHop) {
  const auto gen = ampere();
  // One node of 8: 14 steps of the fitted 6.4 us (Simple).
  comm::NcclShape node;
  node.ranks = node.per_node = 8;
  node.intra_Bps = 234e9;
  node.intra_latency_s = 1e-6;
  EXPECT_NEAR(
      comm::nccl_all_reduce(gen, node, NcclAlgorithm::ring, NcclProtocol::simple, 1e6).latency_s,
      (12 + 8.4 + 14 * 6.4) * 1e-6, 1e-12);
  // 4 nodes of one GPU: 6 network steps at the tree's LL hop (5 us), not the ring's 2.7.
  comm::NcclShape spread;
  spread.ranks = spread.nodes = 4;
  spread.per_node = 1;
  spread.intra_Bps = spread.net_Bps = 25e9;
  spread.net_latency_s = 1e-6;
  EXPECT_NEAR(
      comm::nccl_all_reduce(gen, spread, NcclAlgorithm::ring, NcclProtocol::ll, 4096).latency_s,
      (12 + 6.6 + 6 * 5.0) * 1e-6, 1e-12);
  // A PCIe node's steps in a multi-node ring: tuning.cc's PCI row (LL128 2.5 us).
  const auto pcie =
      comm::nccl_generation(*hw::find_gpu_preset("a100-80gb"), *hw::find_link_preset("pcie4"), 8);
  EXPECT_DOUBLE_EQ(pcie.ring_multi_hop_intra_s[1], 2.5e-6);
}

} // namespace
} // namespace overlapsim
