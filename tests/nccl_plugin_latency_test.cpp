// The latency a network's NCCL plugin reports (hw::LinkSpec::plugin_latency_s, issue 66): NCCL's
// tuner adds it to every network hop, twice under Simple (tuning.cc), and picks by it; the run
// does not pay it. aws-ofi-nccl reports 75 us on AWS p4d/p4de/p5 (src/platform-aws.cpp).
#include "comm/nccl_model.h"
#include "hw/presets.h"
#include "scenario/loader.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>

namespace overlapsim {
namespace {

using comm::NcclAlgorithm;
using comm::NcclProtocol;
using comm::NcclView;
using scenario::load_scenario_text;
using ::testing::HasSubstr;

comm::NcclGeneration hopper_on(const hw::LinkSpec& net) {
  return comm::nccl_generation(*hw::find_gpu_preset("h100-sxm"), *hw::find_link_preset("nvlink4"),
                               8, net);
}

// 2 x 8 H100 over 32 EFA ports of 11.5 GB/s, 30 us a network hop (the efa-100g preset).
comm::NcclShape two_p5_nodes() {
  comm::NcclShape s;
  s.ranks = 16;
  s.nodes = 2;
  s.per_node = 8;
  s.intra_Bps = 360e9;
  s.intra_latency_s = 1e-6;
  s.net_Bps = 32 * 11.5e9;
  s.net_latency_s = 30e-6;
  s.net_heads = 8;
  s.net_nics = 32;
  return s;
}

TEST(NcclPluginLatency, EfaReportsAwsOfiNcclsSeventyFiveMicroseconds) {
  EXPECT_DOUBLE_EQ(hw::find_link_preset("efa-100g")->plugin_latency_s, 75e-6);
  // GPUDirect-TCPXO's plugin and NCCL's own InfiniBand transport report none.
  EXPECT_EQ(hw::find_link_preset("tcpxo-200g")->plugin_latency_s, 0);
  EXPECT_EQ(hw::find_link_preset("ib-ndr")->plugin_latency_s, 0);
  const auto gen = hopper_on(*hw::find_link_preset("efa-100g"));
  EXPECT_DOUBLE_EQ(gen.net_plugin_latency_s, 75e-6);
  // Once a hop under LL and LL128, twice under Simple (the flush NCCL adds).
  EXPECT_DOUBLE_EQ(comm::nccl_plugin_hop_s(gen, NcclProtocol::ll), 75e-6);
  EXPECT_DOUBLE_EQ(comm::nccl_plugin_hop_s(gen, NcclProtocol::ll128), 75e-6);
  EXPECT_DOUBLE_EQ(comm::nccl_plugin_hop_s(gen, NcclProtocol::simple), 150e-6);
}

TEST(NcclPluginLatency, TheTunerSeesItOnEveryNetworkHopTheRunDoesNot) {
  const auto gen = hopper_on(*hw::find_link_preset("efa-100g"));
  const auto s = two_p5_nodes();
  const auto cost = [&](NcclAlgorithm a, NcclProtocol p, NcclView v) {
    return comm::nccl_all_reduce(gen, s, a, p, 1024, v).latency_s;
  };
  // Tree, LL: 12 + 6.6 + 2 x (7 x max(0.6, 1) + log2(2) x max(5, 30)) = 92.6 us as it runs; the
  // tuner's hop is 30 + 75: 242.6 us.
  EXPECT_NEAR(cost(NcclAlgorithm::tree, NcclProtocol::ll, NcclView::run), 92.6e-6, 1e-10);
  EXPECT_NEAR(cost(NcclAlgorithm::tree, NcclProtocol::ll, NcclView::tuner), 242.6e-6, 1e-10);
  // Ring, Simple (1 KiB: below the plateau): 12 + 8.4 + 28 x 3.4 + 2 x max(14, 30) = 175.6 us as
  // it runs; the tuner adds 2 x 150 us.
  EXPECT_NEAR(cost(NcclAlgorithm::ring, NcclProtocol::simple, NcclView::run), 175.6e-6, 1e-10);
  EXPECT_NEAR(cost(NcclAlgorithm::ring, NcclProtocol::simple, NcclView::tuner), 475.6e-6, 1e-10);
  // On one node there is no network hop to add.
  comm::NcclShape one = s;
  one.ranks = one.per_node = 8;
  one.nodes = 1;
  EXPECT_DOUBLE_EQ(
      comm::nccl_all_reduce(gen, one, NcclAlgorithm::ring, NcclProtocol::ll, 1024, NcclView::run)
          .latency_s,
      comm::nccl_all_reduce(gen, one, NcclAlgorithm::ring, NcclProtocol::ll, 1024, NcclView::tuner)
          .latency_s);
}

TEST(NcclPluginLatency, ItSteersNcclsChoiceAndTheChoiceRunsWithoutIt) {
  hw::LinkSpec silent = *hw::find_link_preset("efa-100g");
  silent.plugin_latency_s = 0;
  const auto reporting = hopper_on(*hw::find_link_preset("efa-100g"));
  const auto quiet = hopper_on(silent);
  const auto s = two_p5_nodes();
  // 32 MiB: without the plugin's latency NCCL's tuner picks NVLSTree (its view: 12 + 25 +
  // 2 x max(14, 30) = 97 us, then 32 MiB at min(NVLS 274, the trees' 338 GB/s)); with it,
  // NVLSTree's two network hops cost 2 x 180 us and the ring under LL128 (2 x 105 us) wins.
  const double bytes = 32.0 * 1024 * 1024;
  const auto before = comm::nccl_best_all_reduce(quiet, s, bytes);
  const auto after = comm::nccl_best_all_reduce(reporting, s, bytes);
  EXPECT_EQ(before.algorithm, NcclAlgorithm::nvls);
  EXPECT_EQ(after.algorithm, NcclAlgorithm::ring);
  EXPECT_EQ(after.protocol, NcclProtocol::ll128);
  // The pick is priced as it runs: the ring's LL128 without the plugin's latency.
  EXPECT_DOUBLE_EQ(
      after.time_s,
      comm::nccl_all_reduce(quiet, s, NcclAlgorithm::ring, NcclProtocol::ll128, bytes).time_s);
}

std::string cluster_yaml(const std::string& cluster) {
  return fmt::format("name: t\ncluster: {}\nmodel: {{preset: gpt-neo-125m}}\n"
                     "training: {{micro_batch: 1, seq_len: 128, steps: 1}}\nalgorithms: [ddp]\n",
                     cluster);
}

TEST(NcclPluginLatency, AScenarioKeyOfTheNetwork) {
  const auto p5 = load_scenario_text(cluster_yaml("{preset: aws-p5, nodes: 2}"), "t.yaml");
  EXPECT_DOUBLE_EQ(p5.cluster.inter_node.plugin_latency_s, 75e-6);
  const auto own = load_scenario_text(
      cluster_yaml("{preset: aws-p5, nodes: 2, inter_node: {preset: efa-100g, plugin_latency: "
                   "40us}}"),
      "t.yaml");
  EXPECT_DOUBLE_EQ(own.cluster.inter_node.plugin_latency_s, 40e-6);
  try {
    load_scenario_text(
        cluster_yaml("{nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
                     "inter_node: {bandwidth: 100Gb/s, latency: 5us, plugin_latency: 2s}}"),
        "t.yaml");
    ADD_FAILURE() << "a plugin latency of 2 s loaded";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("t.yaml:2: key 'cluster.inter_node.plugin_latency': "
                                    "expected at most 100 ms"));
  }
}

} // namespace
} // namespace overlapsim
