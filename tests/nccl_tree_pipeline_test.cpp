// NCCL's Simple tree across nodes as the chunk pipeline it runs (comm/nccl_tree_pipeline.h): its
// channels, its first chunk (NCCL_BUFFSIZE / 8) and the fill the first chunk pays through the
// chains and tree levels, against hand numbers; the run against NCCL's tuner view.
#include "comm/nccl_tree_pipeline.h"
#include "scenario/collective_shape.h"
#include "scenario/loader.h"

#include <gtest/gtest.h>
#include <string>

namespace overlapsim {
namespace {

using comm::NcclAlgorithm;
using comm::NcclProtocol;

constexpr double KiB = 1024.0;
constexpr double MiB = 1048576.0;

// 2 x GCP A3 Mega: 8 x H100 on NVLink 4 a node, 8 x 200 Gb/s TCPXO NICs at 0.90 (180 GB/s), GCP's
// TCPXO profile's NCCL_BUFFSIZE of 8 MiB.
comm::NcclGeneration a3_mega_generation() {
  return comm::nccl_generation(*hw::find_gpu_preset("h100-sxm"), *hw::find_link_preset("nvlink4"),
                               8, *hw::find_link_preset("tcpxo-200g"));
}

comm::NcclShape a3_mega_nodes(int nodes) {
  comm::NcclShape s;
  s.nodes = nodes;
  s.per_node = 8;
  s.ranks = 8 * nodes;
  s.intra_Bps = 360e9; // nvlink4: 450 GB/s x 0.80
  s.intra_latency_s = 1e-6;
  s.net_Bps = 8 * 22.5e9;
  s.net_latency_s = 20e-6;
  s.net_nics = s.net_heads = 8;
  return s;
}

TEST(NcclTreePipeline, BuffsizeIsTheProfilesOrNcclsDefault) {
  EXPECT_EQ(hw::find_link_preset("tcpxo-200g")->nccl_buffsize_bytes, 8 * MiB);
  EXPECT_EQ(a3_mega_generation().nccl_buffsize_bytes, 8 * MiB);
  // NCCL's DEFAULT_BUFFSIZE (init.cc) where the network sets none.
  EXPECT_EQ(hw::find_link_preset("tcpx-200g")->nccl_buffsize_bytes, 0);
  EXPECT_EQ(
      comm::nccl_generation(*hw::find_gpu_preset("h100-sxm"), *hw::find_link_preset("nvlink4"), 8)
          .nccl_buffsize_bytes,
      4 * MiB);
  // A scenario sets it on its network.
  const auto s = scenario::load_scenario_text(
      "name: t\ncluster: {nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
      "inter_node: {bandwidth: 400Gb/s, latency: 3us, nccl_buffsize: 2MiB}, nics_per_node: 8}\n"
      "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n",
      "t.yaml");
  EXPECT_EQ(s.cluster.inter_node.nccl_buffsize_bytes, 2 * MiB);
}

// comm->nChannels: the search's 8 (one a NIC, 24 GB/s, not duplicated below 25) doubled to 16;
// fewer while S < channels x 512 x 64 B = channels x 32 KiB.
TEST(NcclTreePipeline, ChannelsAndFirstChunk) {
  const auto gen = a3_mega_generation();
  const auto s = a3_mega_nodes(2);
  EXPECT_EQ(comm::nccl_tree_simple_channels(gen, s, 16 * MiB), 16);
  EXPECT_EQ(comm::nccl_tree_simple_channels(gen, s, 512 * KiB), 16);
  EXPECT_EQ(comm::nccl_tree_simple_channels(gen, s, 256 * KiB), 8);
  EXPECT_EQ(comm::nccl_tree_simple_channels(gen, s, 8 * KiB), 1);
  // 8 MiB / 8 = 1 MiB a chunk; below 16 MiB a channel's whole part is one chunk.
  EXPECT_EQ(comm::nccl_tree_simple_first_chunk(gen, s, 64 * MiB), MiB);
  EXPECT_EQ(comm::nccl_tree_simple_first_chunk(gen, s, 16 * MiB), MiB);
  EXPECT_EQ(comm::nccl_tree_simple_first_chunk(gen, s, 4 * MiB), 256 * KiB);
}

// fill = 2 (g - 1) c1 / 20.6 GB/s + 2 d c1 x channels x fill_load / (0.92 B_net). 2 x 8 A3 Mega,
// 16 MiB: c1 = 1 MiB, 14 NVLink stages of 50.90 us (712.7 us) and 2 NIC stages of 1 MiB x 16 x
// 0.5 / 165.6 GB/s = 50.65 us (101.3 us): 814.0 us.
TEST(NcclTreePipeline, FillHandNumbers) {
  const auto gen = a3_mega_generation();
  const auto s = a3_mega_nodes(2);
  const double chain = 14 * MiB / 20.6e9, net = 2 * MiB * 16 * 0.5 / (0.92 * 180e9);
  EXPECT_NEAR(comm::nccl_tree_simple_fill_s(gen, s, 16 * MiB), chain + net, 1e-12);
  EXPECT_NEAR(chain + net, 814.0e-6, 0.1e-6);
  // 1 MiB: 64 KiB chunks, a sixteenth of it: 50.9 us.
  EXPECT_NEAR(comm::nccl_tree_simple_fill_s(gen, s, MiB), (chain + net) / 16, 1e-12);
  // One node: no tree levels, no pipeline.
  auto one = s;
  one.nodes = 1;
  one.ranks = 8;
  EXPECT_EQ(comm::nccl_tree_simple_fill_s(gen, one, 16 * MiB), 0);
}

// The run: latency + fill + (S - channels x c1) / steady algbw, with no tree correction; NCCL's
// tuner keeps its latency, bandwidth and correction. 2 x 8 A3 Mega, steady 165.6 GB/s (180 x
// 0.92, under the 8 channels x 41.4 / 2 cap).
TEST(NcclTreePipeline, RunPaysTheFillTunerDoesNot) {
  const auto gen = a3_mega_generation();
  const auto s = a3_mega_nodes(2);
  const double steady = 165.6e9;
  for (double bytes : {MiB, 16 * MiB, 64 * MiB, 8192 * MiB}) {
    SCOPED_TRACE(bytes);
    const auto run =
        comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::simple, bytes);
    const double first = std::min(bytes, 16 * MiB);
    EXPECT_NEAR(run.time_s,
                run.latency_s + comm::nccl_tree_simple_fill_s(gen, s, bytes) +
                    (bytes - first) / steady,
                1e-9);
    const auto tuner = comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::simple,
                                             bytes, comm::NcclView::tuner);
    EXPECT_NEAR(tuner.time_s,
                tuner.latency_s +
                    bytes / (steady * comm::nccl_tree_correction(NcclProtocol::simple, bytes)),
                1e-9);
  }
  // 16 MiB: the fill is the whole transfer, 814.0 us after the latency.
  const auto mid =
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::simple, 16 * MiB);
  EXPECT_NEAR(mid.time_s - mid.latency_s, 814.0e-6, 0.1e-6);
  // LL and LL128 move cut-through lines: no fill.
  const auto ll128 =
      comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::ll128, 16 * MiB);
  const auto ll128_tuner = comm::nccl_all_reduce(gen, s, NcclAlgorithm::tree, NcclProtocol::ll128,
                                                 16 * MiB, comm::NcclView::tuner);
  EXPECT_DOUBLE_EQ(ll128.time_s, ll128_tuner.time_s);
}

} // namespace
} // namespace overlapsim
