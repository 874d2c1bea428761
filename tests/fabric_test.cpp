// cluster.fabric: the fat tree's shape against hand counts, its routes' latency and bandwidth
// against hand numbers (oversubscription, rails, shared NICs), and what a user sees.
#include "cli/report.h"
#include "hw/fat_tree.h"
#include "sim/child_process.h"
#include "sim/collective_timing.h"
#include "sim/platform.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <sstream>
#include <stdexcept>
#include <tuple>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;
using testing::scenario_from;

hw::FabricSpec fat_tree(int radix, double oversubscription = 1, int levels = 0,
                        hw::FabricSpec::Placement placement = hw::FabricSpec::Placement::rail) {
  hw::FabricSpec f;
  f.topology = hw::FabricSpec::Topology::fat_tree;
  f.radix = radix;
  f.oversubscription = oversubscription;
  f.levels = levels;
  f.placement = placement;
  return f;
}

TEST(FatTreeShape, ASuperPodOfThirtyTwoDgxNodes) {
  // 32 nodes x 8 NICs on 64-port switches: 8 rail leaves of 32 ports down, 32 up; 32 spines.
  const auto t = hw::build_fat_tree(fat_tree(64), 32, 8);
  EXPECT_EQ(t.levels, 2);
  EXPECT_EQ(t.leaf_down, 32);
  EXPECT_EQ(t.leaf_up, 32);
  EXPECT_EQ(t.down, (std::vector<unsigned>{32, 8}));
  EXPECT_EQ(t.up, (std::vector<unsigned>{1, 32}));
  EXPECT_EQ(t.switches, (std::vector<long long>{8, 32}));
  EXPECT_EQ(t.slots, 256);
  // Rail placement: NIC r of node n at leaf r, port n.
  EXPECT_EQ(t.slot_of(5, 3), 3 * 32 + 5);
  EXPECT_EQ(t.common_level(t.slot_of(0, 3), t.slot_of(31, 3)), 1); // one rail: one leaf apart
  EXPECT_EQ(t.common_level(t.slot_of(0, 3), t.slot_of(0, 4)), 2);  // across rails: the spine
  EXPECT_THAT(hw::describe(t), HasSubstr("8 leaf, 32 spine"));
  EXPECT_THAT(hw::describe(t), HasSubstr("rail-optimised"));
  // Node placement: a node's 8 NICs side by side.
  const auto by_node =
      hw::build_fat_tree(fat_tree(64, 1, 0, hw::FabricSpec::Placement::node), 32, 8);
  EXPECT_EQ(by_node.slot_of(5, 3), 5 * 8 + 3);
  EXPECT_EQ(by_node.common_level(by_node.slot_of(0, 3), by_node.slot_of(0, 4)), 1);
  EXPECT_EQ(by_node.common_level(by_node.slot_of(0, 3), by_node.slot_of(4, 3)), 2);
}

TEST(FatTreeShape, LevelsGrowWithTheClusterAndOversubscriptionSplitsTheLeaf) {
  // 64-port switches hold 64 NICs on one level, 32 x 64 = 2,048 on two, 32 x 32 x 64 = 65,536
  // on three; 131,072 GPUs need a fourth.
  EXPECT_EQ(hw::build_fat_tree(fat_tree(64), 8, 8).levels, 1);
  EXPECT_EQ(hw::build_fat_tree(fat_tree(64), 256, 8).levels, 2);
  EXPECT_EQ(hw::build_fat_tree(fat_tree(64), 8192, 8).levels, 3);
  const auto big = hw::build_fat_tree(fat_tree(64), 16384, 8);
  EXPECT_EQ(big.levels, 4);
  EXPECT_EQ(big.down.back(), 4u); // 131,072 / (32 x 32 x 32) pods of the top level
  // 3:1 on 64 ports: 48 down, 16 up.
  const auto over = hw::build_fat_tree(fat_tree(64, 3), 64, 8);
  EXPECT_EQ(over.leaf_down, 48);
  EXPECT_EQ(over.leaf_up, 16);
  EXPECT_DOUBLE_EQ(over.oversubscription(), 3.0);
  EXPECT_THAT(hw::describe(over), HasSubstr("3:1 at the leaves (48 down, 16 up)"));
  // What does not fit says why.
  try {
    hw::build_fat_tree(fat_tree(8, 1, 1), 4, 4);
    FAIL() << "16 NICs on one 8-port switch";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("16 NICs (4 nodes x 4) need 16 leaf ports; 1 level(s) of "
                                    "8-port switches hold at most 8"));
  }
  EXPECT_THROW(hw::build_fat_tree(fat_tree(4, 10), 4, 1), std::invalid_argument); // 0 ports up
  // More levels than needed build no more than the cluster needs: 2 nodes on 4 levels of
  // 1024-port switches use one leaf and one switch a level above it per leaf uplink.
  const auto tall = hw::build_fat_tree(fat_tree(1024, 1, 4), 2, 1);
  EXPECT_EQ(tall.down, (std::vector<unsigned>{512, 1, 1, 1}));
  EXPECT_EQ(tall.up, (std::vector<unsigned>{1, 512, 1, 1}));
  EXPECT_EQ(tall.slots, 512);
  EXPECT_EQ(tall.switches, (std::vector<long long>{1, 512, 512, 512}));
}

std::string cluster_yaml(int nodes, int gpus, int nics, const std::string& fabric) {
  return "name: fabric\ncluster:\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: " + std::to_string(gpus) +
         "\n  nics_per_node: " + std::to_string(nics) +
         "\n  gpu: h100-sxm\n"
         "  intra_node: {bandwidth: 300GB/s, latency: 1us}\n"
         "  inter_node: {bandwidth: 10GB/s, latency: 2us}\n"
         "  collectives: fused\n"
         "  fabric: " +
         fabric +
         "\nmodel: {preset: gpt-neo-125m}\n"
         "training: {micro_batch: 1, seq_len: 128}\nalgorithms: [ddp]\n";
}

// Flows (source rank, destination rank, bytes) started together on the cluster's platform, each
// over its lanes (Platform::lane); returns when the last ends and the route latency of the first.
std::pair<double, double> run_flows(const scenario::ClusterSpec& cluster,
                                    const std::vector<std::tuple<int, int, double>>& flows) {
  namespace sg4 = simgrid::s4u;
  sim::ChildProcess child([&] {
    int argc = 1;
    char name[] = "fabric";
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    sim::configure_engine(engine, cluster);
    const auto platform = sim::build_platform(cluster);
    double end = 0;
    sg4::Actor::create("flows", platform.gpus[0], [&] {
      std::vector<sg4::CommPtr> comms;
      for (const auto& [src, dst, bytes] : flows)
        for (int k = 0; k < platform.lanes(src, dst); ++k) {
          const auto lane = platform.lane(src, dst, k);
          comms.push_back(sg4::Comm::sendto_async(lane.from, lane.to,
                                                  static_cast<std::uint64_t>(bytes * lane.share)));
        }
      sg4::Comm::wait_all(comms);
      end = sg4::Engine::get_clock();
    });
    engine.run();
    const auto [src, dst, bytes] = flows.front();
    const auto lane = platform.lane(src, dst, 0);
    std::vector<sg4::Link*> links;
    double latency = 0;
    lane.from->route_to(lane.to, links, &latency);
    std::ostringstream out;
    out.precision(17);
    out << end << ' ' << latency;
    return out.str();
  });
  std::istringstream in(child.collect());
  double end = 0, latency = 0;
  in >> end >> latency;
  return {end, latency};
}

constexpr double kNic = 10e9, kLatency = 2e-6, kHop = 150e-9;

TEST(FatTreeRoutes, OneLeafApartCostsInterNodeLatencyAndEachLevelUpTwoHops) {
  // 6 one-GPU nodes, leaves of 3 ports down (radix 6, two levels forced).
  const auto c = scenario_from(cluster_yaml(6, 1, 1, "{topology: fat_tree, radix: 6, levels: 2}"));
  const auto [same_leaf_end, same_leaf] = run_flows(c.cluster, {{0, 1, 1e6}});
  EXPECT_NEAR(same_leaf, kLatency, 1e-12);
  EXPECT_NEAR(same_leaf_end, kLatency + 1e6 / kNic, 1e-9);
  const auto [spine_end, via_spine] = run_flows(c.cluster, {{0, 3, 1e6}});
  EXPECT_NEAR(via_spine, kLatency + 2 * kHop, 1e-12);
  EXPECT_NEAR(spine_end, kLatency + 2 * kHop + 1e6 / kNic, 1e-9);
}

TEST(FatTreeRoutes, AnOversubscribedLeafSharesItsUplinks) {
  // Nodes 0-2 under leaf 0, 3-5 under leaf 1; three 100 MB flows cross at once.
  const std::vector<std::tuple<int, int, double>> crossing{
      {0, 3, 100e6}, {1, 4, 100e6}, {2, 5, 100e6}};
  // 1:1 (radix 6: 3 down, 3 up): d-mod-k sends each to its own spine, 10 ms each.
  const auto full =
      scenario_from(cluster_yaml(6, 1, 1, "{topology: fat_tree, radix: 6, levels: 2}"));
  EXPECT_NEAR(run_flows(full.cluster, crossing).first, 100e6 / kNic + kLatency + 2 * kHop, 1e-9);
  // 3:1 (radix 4: 3 down, 1 up): all three share leaf 0's one uplink, 30 ms.
  const auto over =
      scenario_from(cluster_yaml(6, 1, 1, "{topology: fat_tree, radix: 4, oversubscription: 3}"));
  EXPECT_NEAR(run_flows(over.cluster, crossing).first, 300e6 / kNic + kLatency + 2 * kHop, 1e-9);
}

TEST(FatTreeRoutes, AcrossWanSitesAFlowClimbsToEachSitesGatewayPort) {
  // Two sites of 4 one-GPU nodes, each on its own tree of 4-port switches at 3:1: leaf 0 holds
  // nodes 0-2 of the site, leaf 1 node 3 and the gateway's port (hw/site_fat_trees.h). A flow
  // to the other site climbs to its gateway at level l, crosses both WAN links (5 ms each way
  // here) and descends from the other gateway: 2 l cables a site, and the endpoints' links.
  const std::string sites = "{topology: fat_tree, radix: 4, oversubscription: 3}\n"
                            "  wan: {bandwidth: 1GB/s, latency: 10ms}\n"
                            "  sites: [{nodes: [0, 1, 2, 3]}, {nodes: [4, 5, 6, 7]}]";
  const auto c = scenario_from(cluster_yaml(8, 1, 1, sites));
  // Node 0 meets its gateway at level 2: (inter - 2 hop) + 2 x 4 hop + wan = inter + wan + 6 hop;
  // 100 MB at the WAN's 1 GB/s (the narrowest link).
  const auto [end, latency] = run_flows(c.cluster, {{0, 4, 100e6}});
  EXPECT_NEAR(latency, kLatency + 10e-3 + 6 * kHop, 1e-12);
  EXPECT_NEAR(end, kLatency + 10e-3 + 6 * kHop + 100e6 / 1e9, 1e-9);
  // Node 3 shares its gateway's leaf (level 1): inter + wan + 2 hop.
  EXPECT_NEAR(run_flows(c.cluster, {{3, 7, 1e6}}).second, kLatency + 10e-3 + 2 * kHop, 1e-12);
  // Inside a site, the site's own tree: nodes 4 and 7 are a spine apart.
  EXPECT_NEAR(run_flows(c.cluster, {{4, 7, 1e6}}).second, kLatency + 2 * kHop, 1e-12);
}

TEST(FatTreeRoutes, CrossRailFlowsSpreadOverEveryRailAndGpusShareTheirNic) {
  // 2 nodes x 4 GPUs x 4 NICs on one 8-port switch.
  const auto rails = scenario_from(cluster_yaml(2, 4, 4, "fat_tree"));
  // GPU 1 to GPU 5: both on rail 1, one NIC: 10 ms for 100 MB.
  EXPECT_NEAR(run_flows(rails.cluster, {{1, 5, 100e6}}).first, 100e6 / kNic + kLatency, 1e-9);
  // GPU 3 to GPU 4 (rails 3 and 0): a quarter over each rail, 2.5 ms.
  EXPECT_NEAR(run_flows(rails.cluster, {{3, 4, 100e6}}).first, 100e6 / (4 * kNic) + kLatency, 1e-9);
  // 2 NICs for 4 GPUs: GPUs 0 and 1 send through NIC 0, 20 ms for their 2 x 100 MB.
  const auto shared = scenario_from(cluster_yaml(2, 4, 2, "fat_tree"));
  EXPECT_NEAR(run_flows(shared.cluster, {{0, 4, 100e6}, {1, 5, 100e6}}).first,
              200e6 / kNic + kLatency, 1e-9);
}

TEST(FatTreeCollectives, OneNonBlockingSwitchRunsCollectivesAsTheStarDoes) {
  // NCCL over 8 DGX H100 nodes, all NICs on one 64-port switch: rings and NVLS within 1% of the
  // star's time.
  const std::string base = "name: f\ncluster: {preset: dgx-h100, nodes: 8";
  const std::string rest =
      "}\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n";
  const auto star = scenario_from(base + rest);
  const auto tree = scenario_from(base + ", fabric: fat_tree" + rest);
  for (const auto& [op, size] : {std::pair{CollectiveOp::all_gather, 1e6},
                                 {CollectiveOp::all_gather, 64e6},
                                 {CollectiveOp::all_gather, 1e9},
                                 {CollectiveOp::all_reduce, 1e9}}) {
    const auto a = sim::time_collective(star, op, size);
    const auto b = sim::time_collective(tree, op, size);
    EXPECT_EQ(a.algorithm, b.algorithm) << size;
    // NVLSTree takes its model's time on each (issue 64.1), and the models differ: a star's
    // network bandwidth is its routes' narrowest link, here a GPU's NVLink (360 GB/s), a fat
    // tree's the NICs' (400 GB/s, NIC to NIC): 2% at 1 GB.
    const double within = a.algorithm.starts_with("nvlstree/") ? 0.03 : 0.01;
    EXPECT_NEAR(b.time_s / a.time_s, 1.0, within) << size << " " << a.algorithm;
  }
  // NCCL's tree (LL128, 32 MiB): the star's routes between nodes also cross the GPUs' NVLink
  // links, which the trees' chains load; a fat tree's run NIC to NIC (GPU, PCIe, NIC, as NCCL's
  // do), so its trees are faster, never slower.
  const std::vector<std::string> tree_ll128{"cluster.collective_algorithm=tree",
                                            "cluster.nccl_protocol=LL128"};
  const auto a = sim::time_collective(scenario_from(base + rest, tree_ll128),
                                      CollectiveOp::all_reduce, 32 << 20);
  const auto b = sim::time_collective(scenario_from(base + ", fabric: fat_tree" + rest, tree_ll128),
                                      CollectiveOp::all_reduce, 32 << 20);
  EXPECT_EQ(b.algorithm, "tree/LL128");
  EXPECT_LT(b.time_s, a.time_s);
  EXPECT_GT(b.time_s, 0.85 * a.time_s);
}

TEST(FatTreeCollectives, RailPlacementKeepsRingsOffAnOversubscribedSpine) {
  // 8 DGX H100 nodes on 8-port switches at 3:1 (6 ports down, 2 up). Rail leaves hold rail r of
  // 6 nodes: a ring's node-to-node hops run NIC r to NIC r, under one leaf but at a group's edge,
  // where one hop per leaf goes up. Node placement puts a node's NICs on leaves beside the next
  // node's: most hops climb, 6 NICs' traffic on 2 uplinks.
  const std::string base = "name: f\ncluster: {preset: dgx-h100, nodes: 8, collectives: fused, "
                           "collective_algorithm: ring, fabric: {topology: fat_tree, radix: 8, "
                           "oversubscription: 3, placement: ";
  const std::string rest =
      "}}\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n";
  const auto rail =
      sim::time_collective(scenario_from(base + "rail" + rest), CollectiveOp::all_reduce, 1e9);
  const auto node =
      sim::time_collective(scenario_from(base + "node" + rest), CollectiveOp::all_reduce, 1e9);
  const auto star = sim::time_collective(
      scenario_from("name: f\ncluster: {preset: dgx-h100, nodes: 8, collectives: fused, "
                    "collective_algorithm: ring" +
                    rest.substr(1)),
      CollectiveOp::all_reduce, 1e9);
  EXPECT_NEAR(rail.time_s / star.time_s, 1.0, 0.03);
  EXPECT_GT(node.time_s, 1.2 * rail.time_s);
}

TEST(FabricScenario, EchoedAndCheckedWithFileLineAndKey) {
  const auto s = scenario_from(cluster_yaml(32, 8, 8, "{topology: fat_tree, oversubscription: 3}"));
  EXPECT_THAT(cli::network_summary(s),
              HasSubstr("fat tree, 2 levels of switches (8 leaf, 16 spine), 3:1 at the leaves "
                        "(48 down, 16 up), rail-optimised, 150 ns per switch hop"));
  EXPECT_THAT(cli::network_summary(scenario_from(cluster_yaml(2, 1, 1, "star"))),
              HasSubstr("one non-blocking switch between nodes"));
  const auto error_of = [](const std::string& yaml) {
    try {
      scenario_from(yaml);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of(cluster_yaml(4, 4, 4, "{topology: fat_tree, radix: 8, levels: 1}")),
              HasSubstr("key 'cluster.fabric': 16 NICs (4 nodes x 4) need 16 leaf ports"));
  EXPECT_THAT(error_of(cluster_yaml(2, 1, 1, "{topology: star, radix: 8}")),
              HasSubstr("a star fabric has no switches to shape"));
  EXPECT_THAT(error_of(cluster_yaml(2, 1, 1, "{topology: ring}")),
              HasSubstr("expected one of star, fat_tree"));
  EXPECT_THAT(error_of(cluster_yaml(2, 1, 1, "torus")),
              HasSubstr("unknown fabric 'torus'; expected one of: star, fat_tree, dgx-superpod, "
                        "leaf-spine-2to1"));
  // Presets, and a preset's keys overridden.
  const auto superpod = scenario_from(cluster_yaml(32, 8, 8, "dgx-superpod")).cluster.fabric;
  EXPECT_EQ(superpod.topology, hw::FabricSpec::Topology::fat_tree);
  EXPECT_EQ(superpod.radix, 64);
  EXPECT_EQ(superpod.placement, hw::FabricSpec::Placement::rail);
  EXPECT_EQ(superpod.oversubscription, 1.0);
  const auto cheaper =
      scenario_from(cluster_yaml(32, 8, 8, "{preset: leaf-spine-2to1, oversubscription: 3}"))
          .cluster.fabric;
  EXPECT_EQ(cheaper.oversubscription, 3.0);
  EXPECT_EQ(cheaper.levels, 2);
  EXPECT_EQ(cheaper.placement, hw::FabricSpec::Placement::node);
  auto steps = cluster_yaml(2, 1, 1, "fat_tree");
  steps.replace(steps.find("collectives: fused"), 18, "collectives: steps");
  EXPECT_THAT(error_of(steps), HasSubstr("collectives: steps runs on the star fabric only"));
}

} // namespace
} // namespace overlapsim
