// Keys a scenario writes that change nothing warn (issue 27.6): the warning names file, line and
// key, and the claim "no effect" holds (the numbers are equal with and without the key).
#include "test_util.h"

#include "cli/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace overlapsim::testing;

std::string gpt_neo(const std::string& gpu, const std::string& compute = "") {
  return "name: keys\ncluster:\n  nodes: 1\n  gpus_per_node: 2\n  gpu: " + gpu +
         "\n  intra_node: nvlink3\nmodel: {preset: gpt-neo-125m" + compute +
         "}\ntraining: {micro_batch: 2, seq_len: 256, steps: 2}\nalgorithms: [ddp]\n";
}

TEST(IneffectiveKeys, GpuEfficiencyUnderTheRooflineWarnsAndChangesNothing) {
  const auto low = scenario_from(gpt_neo("{preset: a100-80gb, efficiency: 0.2}"));
  ASSERT_EQ(low.warnings.size(), 1u);
  EXPECT_THAT(low.warnings[0],
              HasSubstr("test.yaml:5: key 'cluster.gpu.efficiency' has no effect: every layer's "
                        "time comes from the per-op roofline"));
  const auto high = scenario_from(gpt_neo("{preset: a100-80gb, efficiency: 0.45}"));
  EXPECT_DOUBLE_EQ(simulate(low, "ddp").metrics.iteration_time_s,
                   simulate(high, "ddp").metrics.iteration_time_s);
  // Priced by FLOPs, the efficiency is the step's compute rate: no warning, and it matters.
  const auto flops_low =
      scenario_from(gpt_neo("{preset: a100-80gb, efficiency: 0.2}", ", compute: flops"));
  const auto flops_high =
      scenario_from(gpt_neo("{preset: a100-80gb, efficiency: 0.45}", ", compute: flops"));
  EXPECT_TRUE(flops_low.warnings.empty());
  EXPECT_GT(simulate(flops_low, "ddp").metrics.iteration_time_s,
            1.5 * simulate(flops_high, "ddp").metrics.iteration_time_s);
  // A preset's own efficiency is not the user's: no warning.
  EXPECT_TRUE(scenario_from(gpt_neo("a100-80gb")).warnings.empty());
}

TEST(IneffectiveKeys, LinksWithNothingToCarryWarn) {
  const auto one_node =
      scenario_from(round_cluster(1, 1, "  nics_per_node: 4\n  fabric: fat_tree\n") + kFourBlocks +
                    "name: x\ntraining: {micro_batch: 1}\nalgorithms: [ddp]\n");
  EXPECT_THAT(one_node.warnings,
              ElementsAre(HasSubstr("test.yaml:6: key 'cluster.inter_node' has no effect: one "
                                    "node (cluster.nodes: 1) sends nothing between nodes"),
                          HasSubstr("test.yaml:8: key 'cluster.nics_per_node' has no effect"),
                          HasSubstr("test.yaml:9: key 'cluster.fabric' has no effect"),
                          HasSubstr("test.yaml:5: key 'cluster.intra_node' has no effect: one GPU "
                                    "per node (cluster.gpus_per_node: 1) sends nothing inside a "
                                    "node")));
  EXPECT_TRUE(scenario_from(round_cluster(2, 2) + kFourBlocks +
                            "name: x\ntraining: {micro_batch: 1}\nalgorithms: [ddp]\n")
                  .warnings.empty());
}

// Issue 25.5: a flat ring across WAN sites, in the alpha-beta views, warns with its cost.
TEST(IneffectiveKeys, AFlatRingAcrossWanSitesWarns) {
  const std::string wan = "  sites: [{name: a, nodes: [0]}, {name: b, nodes: [1]}]\n"
                          "  wan: {bandwidth: 1Gb/s, latency: 20ms}\n";
  const auto yaml = [&](const std::string& extra) {
    return round_cluster(2, 4, wan + extra) + kFourBlocks +
           "name: x\ntraining: {micro_batch: 1}\nalgorithms: [ddp]\n";
  };
  EXPECT_THAT(scenario_from(yaml("  collective_algorithm: ring\n")).warnings,
              ElementsAre(HasSubstr(
                  "key 'cluster.collective_algorithm': a flat ring across 2 WAN sites pays the "
                  "WAN latency (20 ms) on each of its steps (14 for a ring of 8 GPUs: 280 ms per "
                  "all-reduce); auto or hierarchical reduce inside each site first and cross the "
                  "WAN 2(S-1) = 2 times (40 ms)")));
  EXPECT_TRUE(scenario_from(yaml("")).warnings.empty()); // auto
  EXPECT_TRUE(scenario_from(yaml("  collective_algorithm: hierarchical\n")).warnings.empty());
  // NCCL's ring crosses the network between nodes only: one node a site costs no more than
  // auto's 2(S-1) crossings, no warning; 4 one-GPU nodes in 2 sites cross it on 2(4-1) = 6 steps.
  EXPECT_TRUE(scenario_from(yaml("  collective_algorithm: ring\n"), {"cluster.collectives=nccl"})
                  .warnings.empty());
  const auto four = round_cluster(4, 1,
                                  "  sites: [{name: a, nodes: [0, 1]}, {name: b, nodes: [2, 3]}]\n"
                                  "  wan: {bandwidth: 1Gb/s, latency: 20ms}\n"
                                  "  collective_algorithm: ring\n") +
                    kFourBlocks + "name: x\ntraining: {micro_batch: 1}\nalgorithms: [ddp]\n";
  EXPECT_THAT(scenario_from(four, {"cluster.collectives=nccl"}).warnings,
              Contains(HasSubstr("on each of its steps (6 for a NCCL ring of 4 nodes: 120 ms "
                                 "per all-reduce); auto or hierarchical reduce inside each site "
                                 "first and cross the WAN 2(S-1) = 2 times (40 ms)")));
}

// Issue 25.3: a DGX-like node (NVSwitch inside, InfiniBand between) gets a NIC per GPU unless the
// scenario says otherwise; other fabrics keep one.
TEST(IneffectiveKeys, DgxLikeNodesGetANicPerGpu) {
  const auto nics = [](const std::string& intra, const std::string& inter,
                       const std::string& extra = "") {
    return scenario_from("name: x\ncluster:\n  nodes: 2\n  gpus_per_node: 8\n  gpu: a100-80gb\n"
                         "  intra_node: " +
                         intra + "\n  inter_node: " + inter + "\n" + extra + kFourBlocks +
                         "training: {micro_batch: 1}\nalgorithms: [ddp]\n")
        .cluster.nics_per_node;
  };
  EXPECT_EQ(nics("nvlink3", "ib-hdr"), 8);
  EXPECT_EQ(nics("nvlink4", "ib-ndr"), 8);
  EXPECT_EQ(nics("nvlink3", "ib-hdr", "  nics_per_node: 2\n"), 2);
  EXPECT_EQ(nics("nvlink3", "ethernet-100g"), 1);
  EXPECT_EQ(nics("pcie4", "ib-hdr"), 1);
  EXPECT_EQ(nics("nvlink3", "{bandwidth: 200Gb/s, latency: 2us}"), 1);
}

TEST(IneffectiveKeys, ReportAndSummaryCarryThem) {
  const auto s = scenario_from(gpt_neo("{preset: a100-80gb, efficiency: 0.2}"));
  EXPECT_THAT(cli::report_markdown(s, {}),
              HasSubstr("Warning: test.yaml:5: key 'cluster.gpu.efficiency' has no effect"));
  EXPECT_EQ(scenario::to_json(s)["warnings"][0], s.warnings[0]);
  EXPECT_FALSE(scenario::to_json(scenario_from(gpt_neo("a100-80gb"))).contains("warnings"));
}

} // namespace
} // namespace overlapsim
