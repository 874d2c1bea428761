// One owner of communication cost (issue 66.4): comm/ring_shape.h's bus factors against hand
// numbers, and the planners', `auto`'s and the simulator's price of the same collective held to
// one another.
#include "algorithms/layer_cost_estimate.h"
#include "comm/collective_price.h"
#include "comm/ring_shape.h"
#include "scenario/calibration.h"
#include "scenario/collective_shape.h"
#include "scenario/loader.h"
#include "sim/collective_timing.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <utility>

namespace overlapsim {
namespace {

TEST(RingShape, StepsAndBusFactorsByHand) {
  using comm::ring_shape;
  // 8 ranks: all-reduce 14 steps, 2 x 7/8 = 1.75 of S; reduce-scatter and all-gather 7, 0.875.
  EXPECT_EQ(ring_shape(CollectiveOp::all_reduce, 8).steps, 14);
  EXPECT_DOUBLE_EQ(ring_shape(CollectiveOp::all_reduce, 8).bus_factor, 1.75);
  for (auto op :
       {CollectiveOp::reduce_scatter, CollectiveOp::all_gather, CollectiveOp::all_to_all}) {
    EXPECT_EQ(ring_shape(op, 8).steps, 7);
    EXPECT_DOUBLE_EQ(ring_shape(op, 8).bus_factor, 0.875);
  }
  EXPECT_EQ(ring_shape(CollectiveOp::broadcast, 8).steps, 7);
  EXPECT_EQ(ring_shape(CollectiveOp::broadcast, 8).bus_factor, 1);
  EXPECT_EQ(ring_shape(CollectiveOp::send, 2).steps, 1);
  EXPECT_EQ(ring_shape(CollectiveOp::send, 2).bus_factor, 1);
  EXPECT_EQ(ring_shape(CollectiveOp::barrier, 8).steps, 14);
  EXPECT_EQ(ring_shape(CollectiveOp::barrier, 8).bus_factor, 0);
  EXPECT_EQ(ring_shape(CollectiveOp::all_reduce, 1).steps, 0); // nothing crosses a link
  EXPECT_THROW(ring_shape(CollectiveOp::all_reduce, 0), std::invalid_argument);
  // All-gather's runtime data is the shard: 1 MB on 8 ranks is an 8 MB array, of which a rank
  // sends the 7 other shards (7 MB), the (n-1) x S and (n-1)/n x S that disagreed before.
  EXPECT_EQ(comm::array_bytes(CollectiveOp::all_gather, 8, 1e6), 8e6);
  EXPECT_DOUBLE_EQ(comm::ring_bytes_sent(CollectiveOp::all_gather, 8, 8e6), 7e6);
  EXPECT_EQ(comm::ring_bytes_sent(CollectiveOp::recv, 2, 8e6), 0);
  // 4 ranks, 5 us, 12.5 GB/s, 1 GB: 6 x 5 us + 1.5 x 1 GB / 12.5 GB/s = 0.12003 s.
  EXPECT_DOUBLE_EQ(comm::ring_seconds(CollectiveOp::all_reduce, 4, 1e9, 5e-6, 12.5e9),
                   6 * 5e-6 + 1.5 * 1e9 / 12.5e9);
  // Calibration fits read the same shapes (a group of one: a fixed cost and one pass).
  EXPECT_EQ(scenario::ring_shape("all_reduce", 8).bus_factor, 1.75);
  EXPECT_EQ(scenario::ring_shape("send_recv", 2).steps, 1);
  EXPECT_EQ(scenario::ring_shape("all_gather", 1).steps, 1);
  EXPECT_THROW(scenario::ring_shape("gather", 4), std::runtime_error);
}

TEST(RingShape, BusBandwidthOfTheCollectiveCommandIsNcclTests) {
  // busbw = algbw x bus factor: an all-gather of 1 GiB on 8 GPUs over 234 GB/s NVLink (nvlink3's
  // collective bandwidth) reaches the link, as nccl-tests reports it.
  const auto s = scenario::load_scenario_text(
      "name: one\ncluster: {nodes: 1, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3}\n"
      "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n",
      "one.yaml");
  const auto t = sim::time_collective(s, CollectiveOp::all_gather, 1073741824.0);
  EXPECT_DOUBLE_EQ(t.busbw_Bps, t.algbw_Bps * 0.875);
  EXPECT_NEAR(t.busbw_Bps, s.cluster.intra_node.bandwidth_Bps, 0.02 * t.busbw_Bps);
}

TEST(RingShape, EveryOpsBusBandwidthIsNcclTestsConvention) {
  // nccl-tests' doc/PERFORMANCE.md: busbw = algbw x (n-1)/n for all_gather, reduce_scatter and
  // alltoall, x 1 for broadcast and sendrecv, x 2(n-1)/n for all_reduce; algbw = size / time. On
  // 8 GPUs by hand: 7/8 = 0.875, 1, 1, 14/8 = 1.75. `overlapsim collective` reports the same.
  const auto s = scenario::load_scenario_text(
      "name: one\ncluster: {nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}\n"
      "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n",
      "one.yaml");
  const double size = 268435456; // 256 MiB
  const std::pair<CollectiveOp, double> by_hand[] = {
      {CollectiveOp::all_gather, 0.875},        {CollectiveOp::reduce_scatter, 0.875},
      {CollectiveOp::all_to_all, 0.875},        {CollectiveOp::broadcast, 1.0},
      {CollectiveOp::send, 1.0} /* sendrecv */, {CollectiveOp::all_reduce, 1.75}};
  for (const auto& [op, factor] : by_hand) {
    const auto t = sim::time_collective(s, op, size);
    ASSERT_GT(t.time_s, 0) << to_string(op);
    EXPECT_DOUBLE_EQ(t.algbw_Bps, size / t.time_s) << to_string(op);
    EXPECT_DOUBLE_EQ(t.busbw_Bps, t.algbw_Bps * factor) << to_string(op);
    EXPECT_EQ(t.workers, 8);
  }
  // sendrecv by hand: each GPU's message to its neighbour moves as NCCL's p2p (comm/nccl_p2p.h):
  // 256 MiB on 8 ranks has 16 channels of 20.6 GB/s (329.6 GB/s, below NVLink4's 360), after
  // 12 us launch + one 6.4 us NVLink step; its receive uses the other direction.
  const auto sendrecv = sim::time_collective(s, CollectiveOp::send, size);
  EXPECT_NEAR(sendrecv.time_s, 18.4e-6 + size / 329.6e9, 1e-3 * sendrecv.time_s);
  EXPECT_EQ(sendrecv.algorithm, "p2p");
}

struct Case {
  const char* name;
  const char* cluster; // YAML of the cluster map
};

// Clusters whose collectives nothing else slows: the simulator's time of one collective is the
// closed-form price, which the planners and `auto` use.
const Case kCases[] = {
    {"nccl 4x8 A100 HDR",
     "{nodes: 4, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3, inter_node: ib-hdr}"},
    {"nccl 2x8 H100 NDR (NVLSTree)",
     "{nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, inter_node: ib-ndr}"},
    {"nccl 1x8 A6000 PCIe", "{nodes: 1, gpus_per_node: 8, gpu: a6000, intra_node: pcie4}"},
    // The fabric's SHARP (CollNet, NVLS over CollNet) and PAT (one GPU a node): issue 66.2.
    {"nccl 4x8 H100 NDR SHARP",
     "{nodes: 4, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, inter_node: ib-ndr, "
     "nics_per_node: 8, fabric: {sharp: true}}"},
    {"nccl 4x8 H100 NDR collnet",
     "{nodes: 4, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, inter_node: ib-ndr, "
     "nics_per_node: 8, fabric: {sharp: true}, collective_algorithm: collnet}"},
    {"nccl 16x1 H100 NDR (PAT)",
     "{nodes: 16, gpus_per_node: 1, gpu: h100-sxm, inter_node: ib-ndr}"},
    {"fused 16x1 100GbE",
     "{nodes: 16, gpus_per_node: 1, gpu: a100-80gb, inter_node: ethernet-100g, collectives: "
     "fused}"},
    {"fused 4x8 hierarchical",
     "{nodes: 4, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3, inter_node: ethernet-10g, "
     "collectives: fused, collective_algorithm: hierarchical}"},
    {"fused 4x8 auto",
     "{nodes: 4, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3, inter_node: ethernet-10g, "
     "collectives: fused}"},
};

scenario::Scenario scenario_of(const Case& c) {
  return scenario::load_scenario_text(
      fmt::format("name: price\ncluster: {}\nmodel: {{preset: gpt-neo-125m}}\n"
                  "training: {{micro_batch: 1, seq_len: 128}}\nalgorithms: [ddp]\n",
                  c.cluster),
      "price.yaml");
}

TEST(CollectivePrice, PlannersAutoAndTheSimulatorAgree) {
  for (const Case& c : kCases) {
    const auto s = scenario_of(c);
    for (const double bytes : {1048576.0, 67108864.0, 1073741824.0}) {
      for (const auto op :
           {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
        const auto planned = scenario::price_world_collective(s.cluster, op, bytes);
        const auto simulated = sim::time_collective(s, op, bytes);
        // The simulator runs the priced algorithm (its trace label: "ring/LL" for "nccl ring/LL",
        // "hierarchical/fused" for "hierarchical") and takes the priced time, within 1%. NVLSTree
        // is the exception the simulator adds on purpose: its flows share a head GPU's link (NVLS
        // traffic to the switch plus the tree's share to the NIC), which NCCL's model does not
        // count: up to 10% longer at 64 MiB - 1 GiB on 2 x 8 H100s.
        const std::string& ran = simulated.algorithm;
        const double above = ran.starts_with("nvlstree/") ? 0.10 : 0.01;
        EXPECT_GE(simulated.time_s, planned.seconds * 0.99) << c.name << " " << to_string(op);
        EXPECT_LE(simulated.time_s, planned.seconds * (1 + above))
            << c.name << " " << to_string(op) << " " << bytes << " " << ran << " vs "
            << planned.algorithm;
        if (op == CollectiveOp::all_reduce || planned.algorithm.starts_with("nccl ")) {
          const std::string label = planned.algorithm.starts_with("nccl ")
                                        ? planned.algorithm.substr(5)
                                        : planned.algorithm + "/fused";
          EXPECT_EQ(simulated.algorithm, label) << c.name << " " << bytes;
        }
      }
    }
  }
}

TEST(CollectivePrice, TheLayerPlannerPricesEachLayerAsTheSimulatorRunsIt) {
  // DreamDDP's and ASC-WFBP's layer costs: each layer's all-reduce is the collective price of its
  // parameters (no second estimate), and the startup is the price of an empty all-reduce.
  for (const Case& c : kCases) {
    const auto s = scenario_of(c);
    const auto costs = estimate_layer_costs(s);
    ASSERT_EQ(costs.comm_s.size(), s.model.spec.layers.size());
    for (std::size_t i = 0; i < costs.comm_s.size(); ++i) {
      const double bytes = s.model.spec.layers[i].params * scenario::dtype_bytes(s.model.dtype);
      EXPECT_EQ(
          costs.comm_s[i],
          scenario::price_world_collective(s.cluster, CollectiveOp::all_reduce, bytes).seconds)
          << c.name << " layer " << i;
    }
    EXPECT_EQ(all_reduce_startup_s(s),
              scenario::price_world_collective(s.cluster, CollectiveOp::all_reduce, 0).seconds);
    EXPECT_GT(all_reduce_startup_s(s), 0) << c.name;
  }
}

TEST(CollectivePrice, NetworkViewClosedFormsByHand) {
  // 4 nodes x 8 GPUs, 300 GB/s and 1 us inside, 10 GB/s and 5 us between nodes; 1 GB.
  comm::NcclShape s;
  s.ranks = 32, s.nodes = 4, s.per_node = 8;
  s.intra_Bps = 300e9, s.intra_latency_s = 1e-6, s.net_Bps = 10e9, s.net_latency_s = 5e-6;
  const double S = 1e9;
  using comm::CollectiveAlgorithm;
  // ring: 62 steps of the slowest hop (5 us), 62/32 S at the slowest link (10 GB/s).
  EXPECT_DOUBLE_EQ(comm::network_all_reduce_seconds(CollectiveAlgorithm::ring, s, S),
                   62 * 5e-6 + 62.0 / 32 * S / 10e9);
  // tree: (8 - 1) + floor(log2 4) = 9 levels: 18 latencies and 2 S at 10 GB/s.
  EXPECT_DOUBLE_EQ(comm::network_all_reduce_seconds(CollectiveAlgorithm::tree, s, S),
                   18 * 5e-6 + 2 * S / 10e9);
  // hierarchical: 2 x 7 (1 us + S / 2.4 TB/s) + 2 x 3 (5 us + S / 40 GB/s).
  EXPECT_DOUBLE_EQ(comm::network_all_reduce_seconds(CollectiveAlgorithm::hierarchical, s, S),
                   14 * (1e-6 + S / (8 * 300e9)) + 6 * (5e-6 + S / (4 * 10e9)));
  EXPECT_EQ(comm::cheapest_network_all_reduce(s, S), CollectiveAlgorithm::hierarchical);
  // A small array: latency decides, and the hierarchical form's 20 steps beat the tree's 18
  // slower ones (14 of them 1 us).
  EXPECT_EQ(comm::cheapest_network_all_reduce(s, 1), CollectiveAlgorithm::hierarchical);
  s.even = false;
  EXPECT_EQ(comm::network_all_reduce_seconds(CollectiveAlgorithm::hierarchical, s, S),
            std::numeric_limits<double>::infinity());
}

TEST(CollectivePrice, WanSitesReduceInsideEachSiteFirst) {
  // 2 sites x 2 nodes x 8 GPUs over 1 Gb/s and 20 ms (wan-1gbit): an all-reduce of S is a
  // reduce-scatter and an all-gather inside each 16-GPU site plus an all-reduce across the 2
  // sites: 2 (20 ms + inter-node 2 us) + 1 x S / 125 MB/s.
  const auto s = scenario::load_scenario_text(
      "name: wan\ncluster:\n  nodes: 4\n  gpus_per_node: 8\n  gpu: a100-80gb\n"
      "  intra_node: nvlink3\n  inter_node: ib-hdr\n  wan: wan-1gbit\n"
      "  sites: [{name: a, nodes: [0, 1]}, {name: b, nodes: [2, 3]}]\n"
      "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n",
      "wan.yaml");
  const auto price = scenario::price_world_collective(s.cluster, CollectiveOp::all_reduce, 1e8);
  EXPECT_EQ(price.algorithm, "sites");
  const double across = 2 * (20e-3 + 2e-6) + 1e8 / (1e9 / 8);
  EXPECT_GT(price.seconds, across);
  EXPECT_LT(price.seconds, across * 1.02);
  const auto simulated = sim::time_collective(s, CollectiveOp::all_reduce, 1e8);
  EXPECT_NEAR(simulated.time_s, price.seconds, 0.05 * price.seconds) << simulated.algorithm;
}

TEST(CollectivePrice, HardwareFactsNotNamesPickNcclsDefaults) {
  // A custom GPU named like an H100 is not one; its compute capability and its link's kind say
  // what NCCL enables.
  auto load = [](const std::string& cluster) {
    return scenario::load_scenario_text(
        "name: facts\ncluster: " + cluster +
            "\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
            "algorithms: [ddp]\n",
        "facts.yaml");
  };
  const auto named = load("{nodes: 1, gpus_per_node: 8, gpu: {name: h100-sxm, peak_tflops: 989, "
                          "memory: 80GB, hbm_bandwidth: 3.35TB/s}, intra_node: {name: nvlink4, "
                          "bandwidth: 450GB/s, latency: 1us}}");
  EXPECT_EQ(scenario::price_rule(named.cluster).generation.nvls_busbw_Bps, 0);
  EXPECT_FALSE(scenario::price_rule(named.cluster).generation.ll128);
  const auto facts =
      load("{nodes: 1, gpus_per_node: 8, gpu: {name: mine, peak_tflops: 989, memory: 80GB, "
           "hbm_bandwidth: 3.35TB/s, compute_capability: 9.0}, intra_node: {bandwidth: 450GB/s, "
           "latency: 1us, kind: nvlink, nvlink_sharp: true}}");
  EXPECT_GT(scenario::price_rule(facts.cluster).generation.nvls_busbw_Bps, 0);
  EXPECT_TRUE(scenario::price_rule(facts.cluster).generation.ll128);
  // The h200 preset is a Hopper GPU with NVLS on an NVLink 4 switch.
  const auto h200 = load("{nodes: 1, gpus_per_node: 8, gpu: h200, intra_node: nvlink4}");
  EXPECT_EQ(h200.cluster.gpu.compute_capability, 90);
  EXPECT_GT(scenario::price_rule(h200.cluster).generation.nvls_busbw_Bps, 0);
}

} // namespace
} // namespace overlapsim
