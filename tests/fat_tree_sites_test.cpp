// A fat tree per WAN site (issue 64 item 4; hw/site_fat_trees.h): each site's nodes on a fat tree
// of the fabric's shape with a leaf port for its WAN gateway, simulated in full and folded (the
// site fold and the fat tree's leaf fold together), folded against full on a small case.
#include "hw/site_fat_trees.h"
#include "sim/rank_classes.h"
#include "test_util.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <map>

namespace overlapsim {
namespace {

// Site s's tree over its 4 nodes and its gateway's node, one NIC a node, 4-port switches at 3:1
// (3 ports down, 1 up): leaf 0 holds nodes 0-2, leaf 1 node 3 and the gateway (the border node's
// NIC 0, port 4); the level-2 switches join them.
TEST(SiteFatTrees, EachSiteItsTreeAndAGatewayPort) {
  hw::FabricSpec spec;
  spec.topology = hw::FabricSpec::Topology::fat_tree;
  spec.radix = 4;
  spec.oversubscription = 3;
  const auto t = hw::build_site_fat_trees(spec, 8, 1, {{4, 5, 6, 7}, {0, 1, 2, 3}});
  ASSERT_TRUE(t.has_sites());
  ASSERT_EQ(t.trees.size(), 2U);
  EXPECT_EQ(t.trees[0].levels, 2);
  EXPECT_EQ(t.trees[0].leaf_down, 3);
  EXPECT_EQ(t.trees[0].leaf_up, 1);
  EXPECT_EQ(t.site, (std::vector<int>{1, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(t.local, (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(t.gateway, (std::vector<long long>{4, 4}));
  EXPECT_EQ(t.slot(5, 0), 1);
  EXPECT_EQ(t.common_level(4, 6, 0), 1); // one leaf
  EXPECT_EQ(t.common_level(4, 7, 0), 2); // leaves 0 and 1
  EXPECT_EQ(t.common_level(0, 4, 0), -1);
  EXPECT_EQ(t.gateway_level(4, 0), 2);
  EXPECT_EQ(t.gateway_level(7, 0), 1); // node 3 of its site shares the gateway's leaf
  EXPECT_EQ(t.levels(), 2);
  // Without sites, one tree over every node, no gateway: build_fat_tree's.
  const auto one = hw::build_site_fat_trees(spec, 8, 1, {});
  EXPECT_FALSE(one.has_sites());
  EXPECT_EQ(one.trees[0].slots, hw::build_fat_tree(spec, 8, 1).slots);
  EXPECT_EQ(one.gateway_level(3, 0), 0);
}

// `sites` sites of 4 nodes x 4 A100s, one NIC a node, the tree above in every site; a 10 Gbit/s
// WAN.
std::string tree_sites_yaml(int sites, const std::string& extra = "") {
  std::string list;
  for (int s = 0; s < sites; ++s)
    list += fmt::format("{}{{name: s{}, nodes: [{}, {}, {}, {}]}}", s ? ", " : "", s, 4 * s,
                        4 * s + 1, 4 * s + 2, 4 * s + 3);
  return fmt::format("name: tree-sites\n"
                     "cluster: {{nodes: {}, gpus_per_node: 4, gpu: a100-80gb, intra_node: "
                     "nvlink3, inter_node: omnipath-100, wan: wan-10gbit, sites: [{}], fabric: "
                     "{{topology: fat_tree, radix: 4, oversubscription: 3}}{}}}\n"
                     "model: {{preset: gpt-neo-125m, dtype: bf16}}\n"
                     "training: {{micro_batch: 2, seq_len: 128, grad_accum: 2, warmup_steps: 1, "
                     "steps: 2, optimizer: adamw}}\n"
                     "algorithms: [ddp]\n",
                     4 * sites, list, extra);
}

TEST(SiteFatTrees, TheLoaderTakesAFatTreeWithSites) {
  const auto s = testing::scenario_from(tree_sites_yaml(2));
  EXPECT_EQ(s.cluster.fabric.topology, hw::FabricSpec::Topology::fat_tree);
  EXPECT_EQ(s.cluster.sites.size(), 2U);
  // One level of 4-port switches holds 4 NICs: a site's 4 nodes and its gateway do not fit, and
  // the error names the site.
  std::string one_level = tree_sites_yaml(2);
  one_level.replace(one_level.find("oversubscription: 3"), 19, "levels: 1");
  try {
    testing::scenario_from(one_level);
    FAIL() << "expected a refusal";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("site 0 (4 nodes and its WAN gateway's port)"),
              std::string::npos)
        << e.what();
  }
}

sim::RankClasses classes_of(const std::string& yaml) {
  const auto s = testing::scenario_from(yaml);
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  return sim::choose_rank_classes(s, *make_algorithm(a));
}

// The site fold and the fat tree's fold together: one node of 8 runs, its cross-site flows over
// its own WAN image (1/4 of the link), labelled an approximation.
TEST(SiteFatTrees, SitesOnFatTreesFold) {
  const auto rc = classes_of(tree_sites_yaml(2));
  ASSERT_TRUE(rc.folded) << rc.why_full;
  EXPECT_EQ(rc.simulated_ranks(), 4);
  EXPECT_DOUBLE_EQ(rc.wan_share, 0.25);
  EXPECT_EQ(rc.approximation, "fat tree per WAN site: leaf uplinks loaded evenly");
}

double relative(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

// Folded against full, 2 sites x 4 nodes x 4 A100s. On non-blocking trees (8-port switches, one
// level a site) the fold is exact: every summary field to 1e-9 (measured 8e-16). On 3:1 leaves
// with one uplink, nodes meet their gateway at different levels (node 3 of a site on the
// gateway's leaf), so their cross-site phases end 2 hops apart; the fold runs one node of the
// others. Measured: iteration time ddp +1.3e-5, fsdp +3.5e-5, diloco (H 2) +2.0e-6, acco
// +2.2e-5; bytes and memory equal; but full GPUs wait where the folded one does not (fsdp 0.052
// s a step waiting in full, 0 folded; the same idle time shows as exposed communication).
TEST(SiteFatTrees, FoldedAgainstFull) {
  const auto run = [](const std::string& fabric, const char* algorithm,
                      const std::map<std::string, std::string>& options, bool full) {
    std::string yaml = tree_sites_yaml(2, full ? ", rank_classes: off" : "");
    yaml.replace(yaml.find("{topology: fat_tree, radix: 4, oversubscription: 3}"), 51, fabric);
    return testing::simulate(testing::scenario_from(yaml), algorithm, options);
  };
  const std::string non_blocking = "{topology: fat_tree, radix: 8}";
  for (const char* algorithm : {"ddp", "fsdp"}) {
    const auto folded = run(non_blocking, algorithm, {}, false);
    const auto full = run(non_blocking, algorithm, {}, true);
    EXPECT_EQ(folded.trace.workers, 4) << algorithm;
    EXPECT_GT(full.metrics.wan_bytes_per_step, 0) << algorithm;
    const auto& f = folded.metrics;
    const auto& g = full.metrics;
    EXPECT_LE(relative(f.iteration_time_s, g.iteration_time_s), 1e-9) << algorithm;
    EXPECT_LE(relative(f.comm_bytes_per_step, g.comm_bytes_per_step), 1e-9) << algorithm;
    EXPECT_LE(relative(f.wan_bytes_per_step, g.wan_bytes_per_step), 1e-9) << algorithm;
    EXPECT_NEAR(f.exposed_comm_s, g.exposed_comm_s, 1e-9 * g.iteration_time_s) << algorithm;
    EXPECT_NEAR(f.waiting_s, g.waiting_s, 1e-9 * g.iteration_time_s) << algorithm;
    EXPECT_NEAR(f.idle_fraction_mean, g.idle_fraction_mean, 1e-9) << algorithm;
    EXPECT_EQ(f.peak_memory_bytes, g.peak_memory_bytes) << algorithm;
  }
  const std::string oversubscribed = "{topology: fat_tree, radix: 4, oversubscription: 3}";
  const auto folded = run(oversubscribed, "ddp", {}, false);
  const auto full = run(oversubscribed, "ddp", {}, true);
  EXPECT_LE(relative(folded.metrics.iteration_time_s, full.metrics.iteration_time_s), 1e-4);
  EXPECT_LE(relative(folded.metrics.wan_bytes_per_step, full.metrics.wan_bytes_per_step), 1e-9);
  EXPECT_EQ(folded.metrics.peak_memory_bytes, full.metrics.peak_memory_bytes);
}

// Site by site every phase is a fused ring held to its leaves' uplinks and its site's gateway
// cable (Fabric::uplink_time); the ring's running flows are kept per group and its hold per
// (group, bytes) (Fabric::fused_ring, issue 64.4). Exact: the folded runs give, to the last bit,
// the iteration times of main 668b0fd (summary.json, 17 digits), when every phase re-routed
// every flow. A 400 Gb/s WAN, so that the gateway's one 100 Gb/s cable, which the 4 positions'
// cross-site rings share, holds them (without the hold: 4.97-5.3% shorter). ddp: all-reduces,
// three phases each; fsdp: reduce-scatters and all-gathers of several sizes on the same groups,
// so one group keeps several holds.
TEST(SiteFatTrees, KeptRingHoldsGiveTheNumbersOfEveryPhaseRerouted) {
  struct Case {
    int sites;
    const char* algorithm;
    double iteration_s;
  };
  for (const Case& c :
       {Case{2, "ddp", 0.089921878610049}, Case{2, "fsdp", 0.21051822385595206},
        Case{3, "ddp", 0.11345761727671558}, Case{3, "fsdp", 0.28939766161825364}}) {
    std::string yaml = tree_sites_yaml(c.sites);
    yaml.replace(yaml.find("wan-10gbit"), 10, "{bandwidth: 400Gb/s, latency: 1ms}");
    const auto run = testing::simulate(testing::scenario_from(yaml), c.algorithm);
    EXPECT_EQ(run.trace.workers, 4) << c.algorithm; // folded: one node of 4 GPUs
    EXPECT_NEAR(run.metrics.iteration_time_s, c.iteration_s, 1e-15 * c.iteration_s)
        << c.sites << " sites, " << c.algorithm;
  }
}

} // namespace
} // namespace overlapsim
