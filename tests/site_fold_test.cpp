// WAN sites under rank classes (issue 64.2; sim/site_classes.h): sites of equal shape fold, one
// node for all site by site, one site for all under a flat ring, and the folded summary is the
// full simulation's to 1e-9.
#include "fold_compare.h"
#include "sim/rank_classes.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

// `sites` sites of 4 nodes x 4 A100s (NVLink inside, Omni-Path between, a 10 Gbit/s WAN),
// GPT-Neo 125M at a short sequence.
std::string sites_yaml(int sites, const std::string& extra = "") {
  std::string list;
  for (int s = 0; s < sites; ++s)
    list += fmt::format("{}{{name: s{}, nodes: [{}, {}, {}, {}]}}", s ? ", " : "", s, 4 * s,
                        4 * s + 1, 4 * s + 2, 4 * s + 3);
  return fmt::format("name: sites\n"
                     "cluster: {{nodes: {}, gpus_per_node: 4, gpu: a100-80gb, intra_node: "
                     "nvlink3, inter_node: omnipath-100, wan: wan-10gbit, sites: [{}]{}}}\n"
                     "model: {{preset: gpt-neo-125m, dtype: bf16}}\n"
                     "training: {{micro_batch: 2, seq_len: 128, grad_accum: 2, warmup_steps: 1, "
                     "steps: 2, optimizer: adamw}}\n"
                     "algorithms: [ddp]\n",
                     4 * sites, list, extra);
}

sim::RankClasses classes_of(const std::string& yaml) {
  const auto s = testing::scenario_from(yaml);
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  return sim::choose_rank_classes(s, *make_algorithm(a));
}

TEST(SiteFold, SitesOfEqualShapeFold) {
  // Site by site: one node stands for all, its cross-site flows over its own WAN image of 1/4 of
  // the link (4 nodes a site).
  const auto by_site = classes_of(sites_yaml(2));
  ASSERT_TRUE(by_site.folded) << by_site.why_full;
  EXPECT_EQ(by_site.simulated_ranks(), 4);
  EXPECT_EQ(by_site.site, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(by_site.wan_share, 0.25);
  EXPECT_EQ(by_site.wan_image[static_cast<std::size_t>(by_site.node)], by_site.node);
  EXPECT_TRUE(by_site.crosses_sites(by_site.node * 4, 31));
  // A flat ring: one site's nodes run (the first: NCCL's trees over three groups load it most),
  // node i standing for node i of the others; their image is the WAN link's full bandwidth.
  const auto flat = classes_of(sites_yaml(3, ", collective_algorithm: ring"));
  ASSERT_TRUE(flat.folded) << flat.why_full;
  EXPECT_EQ(flat.simulated_nodes(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(flat.representative(16), 0);  // GPU 0 of node 4 -> of node 0
  EXPECT_EQ(flat.representative(47), 15); // GPU 3 of node 11 -> of node 3
  EXPECT_DOUBLE_EQ(flat.wan_share, 1.0);
  EXPECT_EQ(flat.wan_image[0], 0);
  EXPECT_EQ(flat.wan_image[3], 0);
  EXPECT_EQ(flat.wan_image[4], -1);
}

TEST(SiteFold, SitesThatDifferRunInFull) {
  EXPECT_EQ(classes_of(sites_yaml(2, ", collective_algorithm: tree")).why_full,
            "WAN sites under collective_algorithm: tree (a flat tree across sites)");
  // Sites of unequal size fold site by site (tests/unequal_sites_test.cpp), not under a flat ring.
  const std::string uneven = fmt::format(
      "name: u\ncluster: {{nodes: 6, gpus_per_node: 4, gpu: a100-80gb, intra_node: nvlink3, "
      "inter_node: omnipath-100, wan: wan-10gbit, collective_algorithm: ring, sites: [{{nodes: "
      "[0, 1, 2, 3]}}, {{nodes: [4, 5]}}]}}\nmodel: {{preset: gpt-neo-125m}}\ntraining: "
      "{{micro_batch: 2, seq_len: 128}}\nalgorithms: [ddp]\n");
  EXPECT_EQ(classes_of(uneven).why_full, "WAN sites of unequal size under a flat ring");
  // GPU types inside a site: a site's nodes would pair, across the WAN, with nodes of several
  // types (measured: waiting and exposed communication 0.2 s apart folded); not folded (sites
  // typed alike fold, tests/node_types_parallel_test.cpp).
  EXPECT_EQ(classes_of(sites_yaml(2, ", node_types: [{nodes: [6, 7], gpu: a100-40gb}]")).why_full,
            "node_types across WAN sites: a site of several GPU types");
  // Interleaved sites fold site by site, not under a flat ring.
  const auto interleaved = [](const std::string& extra) {
    return testing::scenario_from(
        "name: i\ncluster: {nodes: 4, gpus_per_node: 4, gpu: a100-80gb, intra_node: nvlink3, "
        "inter_node: omnipath-100, wan: wan-10gbit, sites: [{nodes: [0, 2]}, {nodes: [1, 3]}]" +
        extra +
        "}\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 2, seq_len: 128}\n"
        "algorithms: [ddp]\n");
  };
  EXPECT_EQ(sim::rank_classes_obstacle(interleaved("")), "");
  EXPECT_EQ(sim::rank_classes_obstacle(interleaved(", collective_algorithm: ring")),
            "WAN sites that are not blocks of consecutive nodes under a flat ring");
}

using testing::expect_equal_summary;

struct Case {
  const char* name;
  int sites;
  const char* algorithm;
  std::map<std::string, std::string> options;
  const char* extra = "";
  int simulated = 4;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class SiteFoldedEqualsFull : public ::testing::TestWithParam<Case> {};

TEST_P(SiteFoldedEqualsFull, Summaries) {
  const auto& c = GetParam();
  const auto folded = testing::simulate(testing::scenario_from(sites_yaml(c.sites, c.extra)),
                                        c.algorithm, c.options);
  const auto full = testing::simulate(
      testing::scenario_from(sites_yaml(c.sites, std::string(c.extra) + ", rank_classes: off")),
      c.algorithm, c.options);
  EXPECT_EQ(folded.trace.workers, c.simulated);
  EXPECT_TRUE(full.trace.class_of.empty());
  EXPECT_GT(full.metrics.wan_bytes_per_step, 0);
  expect_equal_summary(folded.metrics, full.metrics);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, SiteFoldedEqualsFull,
    ::testing::Values(
        Case{"ddp_2_sites", 2, "ddp", {}}, Case{"ddp_3_sites", 3, "ddp", {}},
        Case{"ddp_hierarchical_3_sites", 3, "ddp", {}, ", collective_algorithm: hierarchical"},
        Case{"diloco_2_sites", 2, "diloco", {{"H", "2"}}},
        Case{"fsdp_hybrid_3_sites", 3, "fsdp", {{"sharding", "hybrid"}}},
        Case{"ddp_flat_ring_2_sites", 2, "ddp", {}, ", collective_algorithm: ring", 16},
        Case{"ddp_flat_ring_3_sites", 3, "ddp", {}, ", collective_algorithm: ring", 16},
        Case{"diloco_flat_ring_3_sites",
             3,
             "diloco",
             {{"H", "2"}},
             ", collective_algorithm: ring",
             16},
        Case{"fsdp_hybrid_flat_ring_2_sites",
             2,
             "fsdp",
             {{"sharding", "hybrid"}},
             ", collective_algorithm: ring",
             16},
        Case{"ddp_tcp_3_sites", 3, "ddp", {}, ", network_model: tcp"},
        // Site by site, the straggler's site waits for it in its own phases: one more node of it
        // runs for its other nodes, at the representative's index; and the nodes at the
        // straggler's index run too, so the ring across sites it joins is a running one.
        Case{"ddp_straggler_2_sites", 2, "ddp", {}, ", stragglers: [{gpu: 21, slowdown: 1.5}]", 16},
        // Node 7 (before, off the representative's index, it crossed without waiting: waiting
        // 0.214 s folded against 0.0088 s in full). 3 sites: the representative, site 1's
        // runner at its index, the straggler and node 3 at the straggler's index (node 11
        // stands for node 3).
        Case{"ddp_straggler_off_index_2_sites",
             2,
             "ddp",
             {},
             ", stragglers: [{gpu: 29, slowdown: 1.5}]",
             16},
        Case{"fsdp_hybrid_straggler_off_index_3_sites",
             3,
             "fsdp",
             {{"sharding", "hybrid"}},
             ", stragglers: [{gpu: 29, slowdown: 1.5}]",
             16},
        // Under a flat ring, the straggler's whole site runs.
        Case{"ddp_flat_ring_straggler_3_sites",
             3,
             "ddp",
             {},
             ", collective_algorithm: ring, stragglers: [{gpu: 21, slowdown: 1.5}]",
             32}),
    [](const auto& case_info) { return std::string(case_info.param.name); });

} // namespace
} // namespace overlapsim
