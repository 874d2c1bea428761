// WAN sites of unequal size (issue 64 item 4; sim/collective/unequal_sites.h): site by site,
// each site's rings inside it and a ring across sites over the pieces of the sites' common
// slicing; folded, one node per site size with its own WAN image of 1 / (its site's nodes), and
// the folded summary the full simulation's.
#include "fold_compare.h"
#include "sim/collective/unequal_sites.h"
#include "sim/collective_timing.h"
#include "sim/rank_classes.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using sim::collective::slice_overlap;

TEST(UnequalSites, SlicesOverlapByHand) {
  // Thirds against halves: [0, 1/3) in [0, 1/2); [1/3, 2/3) straddles both halves, 1/6 each.
  EXPECT_DOUBLE_EQ(slice_overlap(0, 3, 0, 2), 1.0 / 3);
  EXPECT_DOUBLE_EQ(slice_overlap(0, 3, 1, 2), 0.0);
  EXPECT_DOUBLE_EQ(slice_overlap(1, 3, 0, 2), 1.0 / 6);
  EXPECT_DOUBLE_EQ(slice_overlap(1, 3, 1, 2), 1.0 / 6);
  EXPECT_DOUBLE_EQ(slice_overlap(2, 3, 1, 2), 1.0 / 3);
  // 683 and 682 nodes of 8 GPUs, in units of 1 / (5464 x 5456): slice 5463 of 5464 is [5463 x
  // 5456, 5464 x 5456), inside the last of 5456, [5455 x 5464, 5456 x 5464); slice 5462 reaches 8
  // units into it, the rest of it (5448) lies in slice 5454.
  const double unit = 1.0 / (5464.0 * 5456);
  EXPECT_DOUBLE_EQ(slice_overlap(5463, 5464, 5455, 5456), 1.0 / 5464);
  EXPECT_DOUBLE_EQ(slice_overlap(5462, 5464, 5455, 5456), 8 * unit);
  EXPECT_DOUBLE_EQ(slice_overlap(5462, 5464, 5454, 5456), 5448 * unit);
}

// kFourBlocks (200 MB of bf16 gradients) on 3 nodes of one GPU, sites {0, 1} and {2}.
scenario::Scenario three_nodes(const std::string& extra = "") {
  return testing::scenario_from(
      "name: unequal\n" +
      testing::round_cluster(3, 1,
                             "  sites: [{name: a, nodes: [0, 1]}, {name: b, nodes: [2]}]\n"
                             "  wan: {bandwidth: 1Gb/s, latency: 10ms}\n" +
                                 extra) +
      testing::kFourBlocks +
      "training: {micro_batch: 1, seq_len: 1, steps: 2}\nalgorithms: [ddp]\n");
}

TEST(UnequalSites, AllReduceBytesByHand) {
  // S = 200 MB, n_a = 2, n_b = 1, K = 2. Site a's members: a ring reduce-scatter and all-gather
  // over 2, 2 x (1/2) S = 200 MB between nodes; across, 2 (K-1)/K x S / n_a = 100 MB to b's one
  // member (its slice [0, 1) holds both of theirs). b's member: nothing inside, 2 (K-1)/K x S =
  // 200 MB across, 100 MB to each of a's. Per GPU: comm (300 + 300 + 200) / 3, between nodes
  // (200 + 200) / 3, over the WAN (100 + 100 + 200) / 3.
  const auto m = testing::simulate(three_nodes(), "ddp").metrics;
  EXPECT_NEAR(m.comm_bytes_per_step, 800e6 / 3, 1);
  EXPECT_NEAR(m.inter_node_bytes_per_step, 400e6 / 3, 1);
  EXPECT_NEAR(m.wan_bytes_per_step, 400e6 / 3, 1);
  EXPECT_DOUBLE_EQ(m.intra_node_bytes_per_step, 0);
  // The steps fidelity moves the same bytes.
  auto stepped = three_nodes();
  stepped.cluster.collectives = scenario::CollectiveFidelity::steps;
  const auto steps = testing::simulate(stepped, "ddp").metrics;
  EXPECT_NEAR(steps.wan_bytes_per_step, 400e6 / 3, 1);
  EXPECT_NEAR(steps.comm_bytes_per_step, 800e6 / 3, 1);
}

TEST(UnequalSites, AllReduceTimeByHand) {
  // 3 + 3 + 2 nodes of 2 GPUs, 12.5 GB/s a node between nodes, 10 Gbit/s and 10 ms between sites;
  // S = 32 MB. Inside: site a's ring of 6 sends 5 x S/6 over each node's NIC, 2.13 ms, before and
  // after (site c's 3 x S/4 takes 1.92 ms; the phase across waits for the slowest site). Across:
  // every WAN link carries 2 (K-1)/K x S = 4/3 S, 34.1 ms at 1.25 GB/s, after 2 (K-1) - 1 = 3
  // latencies slept and the flows' own. Folded (2 nodes run) and in full alike.
  const double S = 32e6, wan_alpha = 10e-3;
  const double expected = 2 * (5 * S / 6 / 12.5e9) + 4 * wan_alpha + 4 * S / 3 / 1.25e9;
  EXPECT_NEAR(expected, 78.40e-3, 1e-5);
  for (const char* classes : {"auto", "off"}) {
    const auto s = testing::scenario_from(fmt::format(
        "name: t\ncluster: {{nodes: 8, gpus_per_node: 2, gpu: a100-80gb, intra_node: {{bandwidth: "
        "300GB/s, latency: 1us}}, inter_node: {{bandwidth: 100Gb/s, latency: 5us}}, wan: "
        "{{bandwidth: 10Gb/s, latency: 10ms}}, collectives: fused, rank_classes: {}, sites: "
        "[{{nodes: [0, 1, 2]}}, {{nodes: [3, 4, 5]}}, {{nodes: [6, 7]}}]}}\nmodel: {{preset: "
        "gpt-neo-125m}}\ntraining: {{micro_batch: 1, seq_len: 128}}\nalgorithms: [ddp]\n",
        classes));
    const auto t = sim::time_collective(s, CollectiveOp::all_reduce, S);
    EXPECT_EQ(t.algorithm, "sites/unequal/fused");
    EXPECT_NEAR(t.time_s, expected, 0.002 * expected) << classes;
  }
}

// 3 + 3 + 2 nodes of 2 A100s (NVLink inside, Omni-Path between, a 10 Gbit/s WAN), GPT-Neo 125M.
std::string unequal_yaml(const std::string& extra = "") {
  return fmt::format(
      "name: unequal\n"
      "cluster: {{nodes: 8, gpus_per_node: 2, gpu: a100-80gb, intra_node: nvlink3, inter_node: "
      "omnipath-100, wan: wan-10gbit, sites: [{{name: a, nodes: [0, 1, 2]}}, {{name: b, nodes: "
      "[3, 4, 5]}}, {{name: c, nodes: [6, 7]}}]{}}}\n"
      "model: {{preset: gpt-neo-125m, dtype: bf16}}\n"
      "training: {{micro_batch: 2, seq_len: 128, grad_accum: 2, warmup_steps: 1, steps: 2, "
      "optimizer: adamw}}\n"
      "algorithms: [ddp]\n",
      extra);
}

TEST(UnequalSites, OneNodeRunsPerSiteSize) {
  const auto s = testing::scenario_from(unequal_yaml());
  EXPECT_EQ(sim::rank_classes_obstacle(s), "");
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  const auto rc = sim::choose_rank_classes(s, *make_algorithm(a));
  ASSERT_TRUE(rc.folded) << rc.why_full;
  // The representative (a site of 3) and the first node of the site of 2.
  ASSERT_EQ(rc.simulated_nodes().size(), 2u);
  const int small = rc.simulated_nodes().back();
  EXPECT_EQ(small, 6);
  EXPECT_EQ(rc.representative(15), 13);             // GPU 1 of node 7 -> of node 6
  EXPECT_EQ(rc.representative(9), rc.node * 2 + 1); // GPU 1 of node 4 -> the representative's
  EXPECT_DOUBLE_EQ(rc.wan_share_of(rc.node), 1.0 / 3);
  EXPECT_DOUBLE_EQ(rc.wan_share_of(small), 1.0 / 2);
  EXPECT_EQ(rc.wan_image[6], 6);
}

struct Case {
  const char* name;
  const char* algorithm;
  std::map<std::string, std::string> options;
  const char* extra = "";
  int simulated = 4;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class UnequalSitesFoldedEqualsFull : public ::testing::TestWithParam<Case> {};

TEST_P(UnequalSitesFoldedEqualsFull, Summaries) {
  const auto& c = GetParam();
  const auto folded =
      testing::simulate(testing::scenario_from(unequal_yaml(c.extra)), c.algorithm, c.options);
  const auto full = testing::simulate(
      testing::scenario_from(unequal_yaml(std::string(c.extra) + ", rank_classes: off")),
      c.algorithm, c.options);
  EXPECT_EQ(folded.trace.workers, c.simulated);
  EXPECT_TRUE(full.trace.class_of.empty());
  EXPECT_GT(full.metrics.wan_bytes_per_step, 0);
  testing::expect_equal_summary(folded.metrics, full.metrics);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, UnequalSitesFoldedEqualsFull,
    ::testing::Values(
        Case{"ddp", "ddp", {}}, Case{"fsdp", "fsdp", {}},
        Case{"fsdp_hybrid", "fsdp", {{"sharding", "hybrid"}}},
        Case{"diloco", "diloco", {{"H", "2"}}},
        Case{"ddp_hierarchical", "ddp", {}, ", collective_algorithm: hierarchical"},
        // A straggler sets its site apart: one more node of it runs for its other nodes (site b:
        // nodes 3 and 4 beside the representative and node 6; site c: nodes 6 and 7).
        Case{"ddp_straggler_site_b", "ddp", {}, ", stragglers: [{gpu: 9, slowdown: 1.5}]", 8},
        Case{"fsdp_straggler_site_c", "fsdp", {}, ", stragglers: [{gpu: 13, slowdown: 1.5}]", 6}),
    [](const auto& case_info) { return std::string(case_info.param.name); });

TEST(UnequalSites, UnderTheTcpModelTheFoldIsWithinAPercent) {
  // Each flow capped by its TCP window: in full the last pieces to cross run below the link's
  // rate, folded each node's drain its image. Measured: ddp -0.18% of the full iteration time
  // (fsdp -0.08%, diloco -0.64% by the CLI), bytes and memory equal; labelled.
  const auto folded =
      testing::simulate(testing::scenario_from(unequal_yaml(", network_model: tcp")), "ddp");
  const auto full = testing::simulate(
      testing::scenario_from(unequal_yaml(", network_model: tcp, rank_classes: off")), "ddp");
  EXPECT_EQ(folded.trace.workers, 4);
  testing::expect_equal_summary(folded.metrics, full.metrics, 5e-3);
  EXPECT_NEAR(folded.metrics.iteration_time_s / full.metrics.iteration_time_s - 1, -0.0018, 5e-4);
  EXPECT_DOUBLE_EQ(folded.metrics.wan_bytes_per_step, full.metrics.wan_bytes_per_step);
}

} // namespace
} // namespace overlapsim
