// A ring across nodes against hand calculations: its NVLink steps cost what a ring on one node
// takes a step (the fitted hop_intra_s, at least NCCL's per-step network overhead), its network
// steps NCCL's own ring latencies (tuning.cc, NCCL 2.29; NcclGeneration::ring_multi_hop_intra_s,
// ring_hop_net_s).
#include "comm/nccl_model.h"
#include "nccl_shapes.h"

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

TEST(NcclRingLatency, AcrossNodesNvlinkStepsAreOneNodesNetworkStepsNcclsOwn) {
  // 46 steps, 4 across nodes: LL128 12 us launch + 14 base + 42 x 5.0 (the one-node NVLink
  // step) + 4 x 4.0 (NCCL's network ring LL128) = 252 us; LL 12 + 6.6 + 42 x max(0.6, 1 us
  // overhead) + 4 x 2.7 = 71.4 us; Simple (12 + 8.4 + 42 x 6.4 + 4 x 14) x 1.9 (the plateau at
  // 32 MiB).
  const auto gen = ampere();
  EXPECT_DOUBLE_EQ(gen.ring_multi_hop_intra_s[0], 1.0e-6);
  EXPECT_DOUBLE_EQ(gen.ring_multi_hop_intra_s[1], 5.0e-6);
  EXPECT_DOUBLE_EQ(gen.ring_multi_hop_intra_s[2], 6.4e-6);
  const auto s = three_nodes();
  const double bytes = 33554432;
  EXPECT_NEAR(
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll128, bytes).latency_s,
      252e-6, 1e-12);
  EXPECT_NEAR(comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll, bytes).latency_s,
              71.4e-6, 1e-12);
  EXPECT_NEAR(
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::simple, bytes).latency_s,
      (12 + 8.4 + 42 * 6.4 + 4 * 14) * 1.9e-6, 1e-12);
  // LL128's time: + S x 2(n-1)/n over 92% of the NICs' 92 GB/s.
  const auto t = comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll128, bytes);
  EXPECT_NEAR(t.time_s, 252e-6 + bytes * 46 / 24 / (92e9 * 0.92), 1e-12);
}

TEST(NcclRingLatency, AllGatherAcrossTenH100Nodes) {
  // 80 ranks (10 x 8 H100, 8 x 400 Gb/s a node): 79 steps, 9 across nodes (NCCL's nsteps and
  // nInterSteps). LL128: 12 + 14 + 70 x 5.0 + 9 x 4.0 = 412 us; Simple: 12 + 8.4 + 70 x 6.4 +
  // 9 x 14 = 594.4 us. At 32 MiB the tuner runs LL128: 412 us + S x 79/80 over 92% of the
  // NVLink's 360 GB/s (below the NICs' 400): 512 us, busbw 64.7 GB/s (the table: 49.7).
  const auto gen = nccl_test::hopper();
  const auto s = nccl_test::h100_nodes(10, 8);
  const double bytes = 33553920;
  const auto ll128 = comm::nccl_collective_cost(gen, s, CollectiveOp::all_gather,
                                                NcclAlgorithm::ring, NcclProtocol::ll128, bytes);
  EXPECT_NEAR(ll128.latency_s, 412e-6, 1e-12);
  EXPECT_NEAR(comm::nccl_collective_cost(gen, s, CollectiveOp::reduce_scatter, NcclAlgorithm::ring,
                                         NcclProtocol::simple, bytes)
                  .latency_s,
              594.4e-6, 1e-12);
  const auto best = comm::nccl_best_collective(gen, s, CollectiveOp::all_gather, bytes);
  EXPECT_EQ(best.algorithm, NcclAlgorithm::ring);
  EXPECT_EQ(best.protocol, NcclProtocol::ll128);
  EXPECT_NEAR(best.time_s, 412e-6 + bytes * 79 / 80 / (0.92 * 360e9), 1e-12);
  EXPECT_NEAR(bytes / best.time_s * 79 / 80 / 1e9, 64.7, 0.05);
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
