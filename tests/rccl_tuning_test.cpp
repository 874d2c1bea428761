// RCCL's own tuning model on MI300X (comm/rccl_tuning.h; ROCm/rccl src/graph/tuning.cc,
// tuning_model_5) against hand calculations.
#include "comm/rccl_tuning.h"

#include "comm/nccl_model.h"
#include "hw/presets.h"

#include <gtest/gtest.h>

#include <cmath>

namespace overlapsim {
namespace {

using comm::NcclAlgorithm;
using comm::NcclProtocol;
using comm::NcclView;

comm::NcclGeneration mi300x() {
  return comm::nccl_generation(*hw::find_gpu_preset("mi300x"), *hw::find_link_preset("xgmi-mi300x"),
                               8);
}

// One MI300X node: 8 GPUs, 336 GB/s of xGMI a GPU (7 x 64 x 0.75), 1 us a link.
comm::NcclShape one_node() {
  comm::NcclShape s;
  s.ranks = s.per_node = 8;
  s.intra_Bps = 336e9;
  s.intra_latency_s = 1e-6;
  return s;
}

TEST(RcclTuning, Mi300xIsRcclsOwnModel) {
  const auto gen = mi300x();
  ASSERT_NE(gen.rccl, nullptr);
  EXPECT_STREQ(gen.name, "rccl-mi300");
  EXPECT_FALSE(gen.ll128);
  // An A100 stays NCCL's.
  EXPECT_EQ(
      comm::nccl_generation(*hw::find_gpu_preset("a100-80gb"), *hw::find_link_preset("nvlink3"), 8)
          .rccl,
      nullptr);
}

TEST(RcclTuning, OneNodeRingIsRcclsLatencyAndBandwidth) {
  const auto gen = mi300x();
  const auto s = one_node();
  const double bytes = 8388608;
  // Simple: 12 us launch + 17 base + 14 steps x 2.1 us = 58.4 us; bus 336 GB/s x bwRatio 1.0,
  // algbw 336 x 8 / 14 = 192 GB/s: 58.4 + 43.69 = 102.09 us (busbw 143.8 GB/s).
  const auto simple =
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::simple, bytes);
  EXPECT_NEAR(simple.latency_s, 58.4e-6, 1e-12);
  EXPECT_NEAR(simple.time_s, 58.4e-6 + bytes * 14 / 8 / 336e9, 1e-12);
  EXPECT_NEAR(bytes * 1.75 / simple.time_s / 1e9, 143.8, 0.1);
  // LL: 12 + 12 + 14 x max(0.8, the link's 1 us) = 38 us at bwRatio 0.08 of the bus.
  const auto ll = comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll, bytes);
  EXPECT_NEAR(ll.latency_s, 38e-6, 1e-12);
  EXPECT_NEAR(ll.algbw_Bps, 336e9 * 0.08 * 8 / 14, 1);
  // LL128 off (gfx90a only); the tree's Simple skipped on one node of gfx94x.
  EXPECT_TRUE(std::isinf(
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::ll128, bytes).time_s));
  EXPECT_TRUE(std::isinf(
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::simple, bytes).time_s));
  // What runs at 8 MiB: the ring, Simple.
  const auto best = comm::nccl_best_all_reduce(gen, s, bytes);
  EXPECT_EQ(best.algorithm, NcclAlgorithm::ring);
  EXPECT_EQ(best.protocol, NcclProtocol::simple);
}

TEST(RcclTuning, AcrossNodesRcclsNetworkStepsAndNoPlateau) {
  const auto gen = mi300x();
  comm::NcclShape s = one_node();
  s.ranks = 16;
  s.nodes = 2;
  s.net_Bps = 8 * 46e9;
  s.net_latency_s = 3e-6;
  s.net_heads = s.net_nics = 8;
  const double bytes = 1 << 30;
  // Simple: 12 + 17 + 28 steps inside nodes x max(2.1, 3 us of network overhead) + 2 network
  // steps x 320 us = 753 us, not multiplied by NCCL's plateau.
  const auto run = comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::simple, bytes);
  EXPECT_NEAR(run.latency_s, 753e-6, 1e-12);
  // The tuner sees RCCL's ring correction (Simple, 1 GiB: column 24, 1.0; 8 MiB: column 17, 0.1);
  // the run does not.
  const auto tuner_small = comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::simple,
                                                 8388608, NcclView::tuner);
  const auto run_small =
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::ring, NcclProtocol::simple, 8388608);
  EXPECT_NEAR(tuner_small.algbw_Bps, 0.1 * run_small.algbw_Bps, 1);
  // The tree: RCCL's bwRatio on 2 nodes, Simple 0.11; latency 12 + 17 + 2 (7 x 2.1 + 1 x 25).
  const auto tree = comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::simple, bytes);
  EXPECT_NEAR(tree.latency_s, (29 + 2 * (7 * 2.1 + 25)) * 1e-6, 1e-12);
  EXPECT_NEAR(tree.algbw_Bps, std::min(336e9 * 0.5, 8 * 46e9 * 0.92) * 0.11, 1);
}

TEST(RcclTuning, CorrectionColumnsAreLog2OfSixtyFourByteUnits) {
  const auto& t = comm::rccl_mi300_tuning();
  EXPECT_DOUBLE_EQ(comm::rccl_correction(t.ring_correction, NcclProtocol::simple, 8388608), 0.1);
  EXPECT_DOUBLE_EQ(comm::rccl_correction(t.ring_correction, NcclProtocol::simple, 536870912), 0.8);
  EXPECT_DOUBLE_EQ(comm::rccl_correction(t.ring_correction, NcclProtocol::simple, 1073741824), 1.0);
  EXPECT_DOUBLE_EQ(comm::rccl_correction(t.ring_correction, NcclProtocol::ll, 131072), 1.0);
  EXPECT_DOUBLE_EQ(comm::rccl_correction(t.tree_correction, NcclProtocol::simple, 64), 0.1);
  EXPECT_DOUBLE_EQ(comm::rccl_correction(t.tree_correction, NcclProtocol::simple, 1e12), 0.8);
}

} // namespace
} // namespace overlapsim
