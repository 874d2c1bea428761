// NCCL's send/recv (comm/nccl_p2p.h) against hand calculations from NCCL 2.29's source
// (paths.cc, enqueue.cc, init.cc), and the simulator's sendrecv taking the price.
#include "comm/collective_price.h"
#include "comm/nccl_channels.h"
#include "comm/nccl_p2p.h"
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

TEST(NcclP2p, OneNodeChannelsGrowWithTheMessage) {
  // 8 ranks: 32 channels a peer (NVLink), at least 32 / 8 = 4 a message; parts of 64 KiB to
  // 16 MiB (512 KiB chunk / 8 and x 32): 32 MiB and 64 MiB keep 4 channels (8 and 16 MiB parts),
  // 128 MiB takes 8, 256 MiB 16, 512 MiB 32; 64 KiB has one channel (a part is at least 64 KiB).
  const auto gen = hopper();
  const auto s = h100_nodes(1, 8);
  EXPECT_DOUBLE_EQ(gen.p2p_nvlink_channel_Bps, 20.6e9);
  EXPECT_EQ(comm::nccl_p2p_channels_per_peer(gen, s), 32);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 65536), 1);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 32 * MiB), 4);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 64 * MiB), 4);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 128 * MiB), 8);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 256 * MiB), 16);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 512 * MiB), 32);
  // 32 MiB on 4 channels of 20.6 GB/s (Simple): 12 us launch + 6.4 us NVLink step + S / 82.4 GB/s.
  const auto c = comm::nccl_p2p_cost(gen, s, false, 32 * MiB);
  EXPECT_EQ(c.protocol, comm::NcclProtocol::simple);
  EXPECT_DOUBLE_EQ(c.Bps, 82.4e9);
  EXPECT_NEAR(c.time_s, 18.4e-6 + 32 * MiB / 82.4e9, 1e-12);
  // 512 MiB: 32 x 20.6 = 659 GB/s, the link's 360 caps it.
  EXPECT_DOUBLE_EQ(comm::nccl_p2p_cost(gen, s, false, 512 * MiB).Bps, 360e9);
  // 16 KiB on one channel: LL (at most 16 KiB a channel), 21% of 20.6 GB/s, LL's 0.6 us step
  // (the link's 1 us latency is longer).
  const auto ll = comm::nccl_p2p_cost(gen, s, false, 16384);
  EXPECT_EQ(ll.protocol, comm::NcclProtocol::ll);
  EXPECT_NEAR(ll.time_s, 12e-6 + 1e-6 + 16384 / (0.21 * 20.6e9), 1e-12);
  // A pair's own communicator (a pipeline's two stages): 32 / 2 = 16 channels at least.
  EXPECT_EQ(comm::nccl_p2p_channels(gen, h100_nodes(1, 2), 32 * MiB), 16);
}

TEST(NcclP2pAcrossNodes, OneNicAndFewChannels) {
  const auto gen = hopper();
  // 10 x 8: the ring search finds 8 channels of 48 GB/s (one a NIC; sm_90 keeps more than 4
  // below 50 GB/s undoubled), connect.cc doubles them: 16 collective channels, 16 p2p channels.
  // A peer on another node asks max(1 NIC, ceil(50 / 14)) = 4 channels, fewer than NVLink's;
  // halved while it x ceil(80 / 8) > 16: 4 x 10, 2 x 10, so 1. A message: 1 channel, 14 GB/s on
  // the GPU's one 50 GB/s NIC (not the node's 400 GB/s).
  const auto s = h100_nodes(10, 8);
  EXPECT_EQ(comm::nccl_comm_channels(gen, s), 16);
  EXPECT_EQ(comm::nccl_p2p_comm_channels(gen, s), 16);
  EXPECT_EQ(comm::nccl_p2p_channels_per_peer(gen, s), 1);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 32 * MiB), 1);
  const auto across = comm::nccl_p2p_cost(gen, s, true, 32 * MiB);
  EXPECT_DOUBLE_EQ(across.Bps, 14e9);
  // 12 us launch + NCCL's 14 us Simple network hop.
  EXPECT_NEAR(across.time_s, 26e-6 + 32 * MiB / 14e9, 1e-12);
  // Its NVLink pairs use the communicator's 1 channel a peer too: 20.6 GB/s.
  EXPECT_DOUBLE_EQ(comm::nccl_p2p_cost(gen, s, false, 32 * MiB).Bps, 20.6e9);
  // A pipeline pair on two nodes (one GPU each): the search's one channel of 48 GB/s doubled to
  // 2 of 24, then by connect.cc to 4 collective and p2p channels; the only peer asks 4
  // (4 x 1 <= 4); a message starts from 2 (4 x 2 ranks > 4) and doubles to 4 above 128 KiB
  // parts: 56 GB/s of channels, the NIC's 50 GB/s caps it.
  const auto pair = h100_nodes(2, 1);
  EXPECT_EQ(comm::nccl_p2p_comm_channels(gen, pair), 4);
  EXPECT_EQ(comm::nccl_p2p_channels(gen, pair, 32 * MiB), 4);
  EXPECT_DOUBLE_EQ(comm::nccl_p2p_cost(gen, pair, true, 32 * MiB).Bps, 50e9);
}

TEST(NcclP2pAcrossNodes, TenNodesByGpusANode) {
  // The 10-node H100 cluster's sendrecv_perf with 1, 2, 4 and 8 GPUs a node
  // (tests/data/nccl-tests/h100-10x{1,2,4,8}-sendrecv.log): a GPU's message to the next node.
  // The communicator's channels: the ring search's one a NIC the node's GPUs use (1, 2, 4, 8 of
  // 48 GB/s), doubled where 4 or fewer (ncclTopoDupChannels), doubled again (connect.cc): 4, 8,
  // 16, 16 collective and p2p channels. A peer on another node asks max(1 NIC, ceil(50 / 14)) = 4;
  // halved while it x ceil(ranks / 8) exceeds them: 4 x 2 > 4, 4 x 3 > 8, 4 x 5 > 16, 4 x 10 and
  // 2 x 10 > 16, so 2, 2, 2, 1 a peer, and a message of 32 MiB takes them all: 28, 28, 28,
  // 14 GB/s. The tables' 1 GiB rows: 24.88, 25.19, 26.25, 15.24 GB/s (1.12, 1.11, 1.07, 0.92x).
  const auto gen = hopper();
  const int gpus[] = {1, 2, 4, 8};
  const int comm_channels[] = {4, 8, 16, 16};
  const int channels[] = {2, 2, 2, 1};
  const double Bps[] = {28e9, 28e9, 28e9, 14e9};
  for (int i = 0; i < 4; ++i) {
    const auto s = h100_nodes(10, gpus[i]);
    EXPECT_EQ(comm::nccl_comm_channels(gen, s), comm_channels[i]) << gpus[i];
    EXPECT_EQ(comm::nccl_p2p_channels_per_peer(gen, s), channels[i]) << gpus[i];
    EXPECT_EQ(comm::nccl_p2p_channels(gen, s, 32 * MiB), channels[i]) << gpus[i];
    EXPECT_DOUBLE_EQ(comm::nccl_p2p_cost(gen, s, true, 32 * MiB).Bps, Bps[i]) << gpus[i];
  }
  // The same nodes two at a time (h100-2x{1,8}-sendrecv.log; the pairwise sweep's medians
  // 39.6-43.0 GB/s with 1, 2, 4, 8 GPUs a node): 2, 4, 8 and 16 ranks halve nothing
  // (4 x 1 <= 4, 8, 16; 4 x 2 <= 16), 4 channels a peer, the NIC's 50 GB/s.
  for (const int g : gpus) {
    const auto s = h100_nodes(2, g);
    EXPECT_EQ(comm::nccl_p2p_channels_per_peer(gen, s), 4) << g;
    EXPECT_DOUBLE_EQ(comm::nccl_p2p_cost(gen, s, true, 4096 * MiB).Bps, 50e9) << g;
  }
}

TEST(NcclP2pAcrossNodes, FastNicsAndFewGpusDoubleAgain) {
  // connect.cc's second doubling: sm_90, channels above 45 GB/s, fewer than 16. 2 nodes of 8
  // H100s with 6 NICs of 400 Gb/s: 6 channels of 48 GB/s (more than 4 below 50: not duplicated
  // by the search), 12 after connect.cc, 24 after the sm_90 rule; 32 p2p channels.
  const auto gen = hopper();
  auto s = h100_nodes(2, 8);
  s.net_nics = s.net_heads = 6;
  s.net_Bps = 6 * 50e9;
  EXPECT_EQ(comm::nccl_comm_channels(gen, s), 24);
  EXPECT_EQ(comm::nccl_p2p_comm_channels(gen, s), 32);
  // One node: the assumed 32 (kNcclP2pChannels).
  EXPECT_EQ(comm::nccl_p2p_comm_channels(gen, h100_nodes(1, 8)), 32);
}

TEST(NcclP2pAcrossNodes, GpuRail) {
  // AWS p5: 32 EFA ports of 100 Gb/s for 8 GPUs: 4 a GPU, 50 GB/s; 4 NICs for 8 GPUs: one shared.
  const auto p5 = comm::gpu_rail(32, 8, 12.5e9);
  EXPECT_EQ(p5.nics, 4);
  EXPECT_DOUBLE_EQ(p5.Bps, 50e9);
  const auto shared = comm::gpu_rail(4, 8, 25e9);
  EXPECT_EQ(shared.nics, 1);
  EXPECT_DOUBLE_EQ(shared.Bps, 25e9);
}

TEST(NcclP2p, PcieHasNoChannelCap) {
  // No NVLink: a channel takes the link (2 channels a peer).
  const auto gen =
      comm::nccl_generation(*hw::find_gpu_preset("a100-80gb"), *hw::find_link_preset("pcie4"), 8);
  EXPECT_EQ(gen.p2p_nvlink_channel_Bps, 0);
  comm::NcclShape s;
  s.ranks = s.per_node = 8;
  s.intra_Bps = 20e9;
  EXPECT_EQ(comm::nccl_p2p_channels_per_peer(gen, s), 2);
  EXPECT_DOUBLE_EQ(comm::nccl_p2p_cost(gen, s, false, 64 * MiB).Bps, 20e9);
}

TEST(NcclP2p, SimulatedSendrecvTakesThePrice) {
  // nccl-tests' sendrecv on 2 x 8 H100 (8 x 400 Gb/s a node): every rank sends to the next; the
  // pair across nodes ends it, on its GPU's NIC: what price_collective says, within 1%.
  const auto s = scenario::load_scenario_text(
      "name: p2p\ncluster: {nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
      "inter_node: {bandwidth: 400Gb/s, latency: 3us}, nics_per_node: 8}\n"
      "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n",
      "p2p.yaml");
  for (const double bytes : {1 * MiB, 64 * MiB}) {
    const auto simulated = sim::time_collective(s, CollectiveOp::send, bytes);
    const auto priced = scenario::price_world_collective(s.cluster, CollectiveOp::send, bytes);
    EXPECT_NEAR(simulated.time_s, priced.seconds, 0.01 * priced.seconds) << bytes;
  }
}

} // namespace
} // namespace overlapsim
