// NCCL's all-to-all (comm/nccl_alltoall.h: grouped sends and receives, one pair per peer) against
// hand calculations from NCCL 2.29's source (paths.cc, enqueue.cc), and the simulator and the
// closed-form price agreeing on it.
#include "comm/collective_price.h"
#include "comm/nccl_alltoall.h"
#include "nccl_shapes.h"
#include "scenario/collective_shape.h"
#include "scenario/loader.h"
#include "sim/collective_timing.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

constexpr double MiB = 1048576.0;

using nccl_test::h100_nodes;
using nccl_test::hopper;

TEST(NcclAllToAll, OneNodeIsTheNvlinkOfSevenPeers) {
  // 8 ranks, 32 MiB: 4 MiB to each peer on 4 channels (32 a peer halved while x 8 ranks > 32),
  // Simple; 7 peers x 4 channels x 20.6 GB/s = 577 GB/s, so the GPU's 360 GB/s NVLink caps them:
  // 12 us launch + 6.4 us NVLink step + 7 x 4 MiB / 360 GB/s = 18.4 + 81.55 us.
  const auto c = comm::nccl_all_to_all_cost(hopper(), h100_nodes(1, 8), 32 * MiB);
  EXPECT_EQ(c.channels, 4);
  EXPECT_EQ(c.protocol, comm::NcclProtocol::simple);
  EXPECT_EQ(c.rounds, 1);
  EXPECT_NEAR(c.latency_s, 18.4e-6, 1e-12);
  EXPECT_NEAR(c.intra_s, 7 * 4 * MiB / 360e9, 1e-12);
  EXPECT_EQ(c.net_s, 0);
  EXPECT_NEAR(c.time_s, 18.4e-6 + 81.55e-6, 0.01e-6);
}

TEST(NcclAllToAll, SmallMessagesRunLlOnOneChannelEach) {
  // 64 KiB: 8 KiB a peer, one channel (parts of at least 64 KiB), LL (<= 16 KiB a channel):
  // 7 channels x 20.6 GB/s = 144.2 GB/s under the link, at LL's 21%; the link's 1 us latency
  // is above LL's 0.6 us step: 13 us + 7 x 8192 / (0.21 x 144.2 GB/s) = 13 + 1.894 us.
  const auto c = comm::nccl_all_to_all_cost(hopper(), h100_nodes(1, 8), 65536);
  EXPECT_EQ(c.channels, 1);
  EXPECT_EQ(c.protocol, comm::NcclProtocol::ll);
  EXPECT_NEAR(c.time_s, 13e-6 + 7 * 8192 / (0.21 * 144.2e9), 1e-12);
  EXPECT_NEAR(c.time_s, 14.894e-6, 0.001e-6);
}

TEST(NcclAllToAll, AcrossNodesTheGpusOwnNic) {
  // 10 x 8 H100, nccl-tests' 33553920 B: 419424 B a peer on 1 channel (the communicator's 16 p2p
  // channels leave 1 a peer, comm/nccl_p2p.h), Simple; 72 peers on other nodes cross the GPU's
  // one 50 GB/s NIC (72 x 14 GB/s is far above it), 7 the NVLink at 7 x 20.6 = 144.2 GB/s
  // (their channels, below its 360): 12 us + 14 us network hop + 72 x 419424 / 50 GB/s =
  // 26 + 603.97 us; 80 parts fit one round of 16 channels x 8.
  const auto c = comm::nccl_all_to_all_cost(hopper(), h100_nodes(10, 8), 33553920);
  EXPECT_EQ(c.channels, 1);
  EXPECT_EQ(c.protocol, comm::NcclProtocol::simple);
  EXPECT_EQ(c.rounds, 1);
  EXPECT_NEAR(c.net_s, 72 * 419424 / 50e9, 1e-12);
  EXPECT_NEAR(c.intra_s, 7 * 419424 / 144.2e9, 1e-12);
  EXPECT_NEAR(c.time_s, 26e-6 + 603.97e-6, 0.01e-6);
}

TEST(NcclAllToAll, ManyPeersTakeRoundsOfBatches) {
  // 128 x 8: 16 p2p channels, 1 a peer (4 halved while x ceil(1024 / 8) > 16), 1024 parts over
  // 16 channels x 8 works a batch: 8 rounds, each a 14 us network hop: 12 + 112 us of latency.
  const auto c = comm::nccl_all_to_all_cost(hopper(), h100_nodes(128, 8), 1024 * MiB);
  EXPECT_EQ(c.channels, 1);
  EXPECT_EQ(c.rounds, 8);
  EXPECT_NEAR(c.latency_s, 124e-6, 1e-12);
  EXPECT_NEAR(c.net_s, 1016 * (1024 * MiB / 1024) / 50e9, 1e-12);
}

TEST(NcclAllToAll, PriceCollectiveAsksIt) {
  const auto gen = hopper();
  const auto s = h100_nodes(10, 8);
  const comm::PriceRule nccl{comm::CollectiveFidelity::nccl, comm::CollectiveAlgorithm::automatic,
                             comm::NcclProtocolChoice::automatic, gen};
  const auto p = comm::price_collective(nccl, s, CollectiveOp::all_to_all, 64 * MiB);
  EXPECT_DOUBLE_EQ(p.seconds, comm::nccl_all_to_all_cost(gen, s, 64 * MiB).time_s);
  EXPECT_EQ(p.algorithm, "nccl p2p/Simple");
  // The network views keep the ring form: 79 steps of 3 us + 79/80 S over the slower of the
  // NVLink (360 GB/s) and the node's NICs (400 GB/s).
  const comm::PriceRule fused{comm::CollectiveFidelity::fused, comm::CollectiveAlgorithm::automatic,
                              comm::NcclProtocolChoice::automatic, gen};
  EXPECT_NEAR(comm::price_collective(fused, s, CollectiveOp::all_to_all, 64 * MiB).seconds,
              79 * 3e-6 + 79.0 / 80 * 64 * MiB / 360e9, 1e-12);
}

TEST(NcclAllToAll, SimulatedAllToAllTakesThePrice) {
  // `overlapsim collective --op all-to-all` (the simulator's flows, paced) and the planners'
  // closed form (scenario::price_world_collective) agree within 1%, on one node and across two.
  for (const int nodes : {1, 2}) {
    const auto s = scenario::load_scenario_text(
        fmt::format("name: a2a\ncluster: {{nodes: {}, gpus_per_node: 8, gpu: h100-sxm, "
                    "intra_node: nvlink4, inter_node: {{bandwidth: 400Gb/s, latency: 3us}}, "
                    "nics_per_node: 8}}\nmodel: {{preset: gpt-neo-125m}}\n"
                    "training: {{micro_batch: 1, seq_len: 128}}\nalgorithms: [ddp]\n",
                    nodes),
        "a2a.yaml");
    for (const double bytes : {1 * MiB, 256 * MiB}) {
      const auto simulated = sim::time_collective(s, CollectiveOp::all_to_all, bytes);
      const auto priced =
          scenario::price_world_collective(s.cluster, CollectiveOp::all_to_all, bytes);
      EXPECT_NEAR(simulated.time_s, priced.seconds, 0.01 * priced.seconds) << nodes << " " << bytes;
      EXPECT_EQ(simulated.algorithm, priced.algorithm.substr(5)) << nodes << " " << bytes;
    }
  }
}

} // namespace
} // namespace overlapsim
