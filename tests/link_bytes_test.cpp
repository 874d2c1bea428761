// Bytes per step by the link class they cross (issue 25.6), against hand counts.
#include "test_util.h"

#include "cli/report.h"
#include "cli/run_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using namespace overlapsim::testing;
using ::testing::HasSubstr;

// kFourBlocks (100M parameters: 200 MB of bf16 gradients) on 2 nodes of 2 GPUs.
scenario::Scenario two_by_two(const std::string& extra) {
  return scenario_from("name: links\n" + round_cluster(2, 2, extra) + kFourBlocks +
                       "training: {micro_batch: 1, seq_len: 1, steps: 2}\nalgorithms: [ddp]\n");
}

TEST(LinkBytes, ARingSplitsItsBytesByTheHopEachRankSendsOn) {
  // Ring 0 -> 1 -> 2 -> 3 -> 0: ranks 0 and 2 send inside their node, 1 and 3 across. Each sends
  // 2(n-1)/n x 200 MB = 300 MB a step: per GPU on average 150 MB inside, 150 MB between nodes.
  const auto m = simulate(two_by_two("  collective_algorithm: ring\n"), "ddp").metrics;
  EXPECT_NEAR(m.comm_bytes_per_step, 300e6, 1);
  EXPECT_NEAR(m.intra_node_bytes_per_step, 150e6, 1);
  EXPECT_NEAR(m.inter_node_bytes_per_step, 150e6, 1);
  EXPECT_DOUBLE_EQ(m.wan_bytes_per_step, 0);
}

TEST(LinkBytes, ATreeSplitsItsBytesAsItsOwnChainAndTreeFlows) {
  // Per GPU: the chain inside the node carries S each way; each of the two trees joins the nodes'
  // same-position GPUs with S/2 over 2 lanes, S/4 each. Own flows S inside, S/2 between nodes:
  // two thirds of whatever the tree sends stay in the node (not all counted as the farthest).
  const auto m = simulate(two_by_two("  collective_algorithm: tree\n"), "ddp").metrics;
  ASSERT_GT(m.comm_bytes_per_step, 0);
  EXPECT_NEAR(m.intra_node_bytes_per_step, 2 * m.comm_bytes_per_step / 3, 1);
  EXPECT_NEAR(m.inter_node_bytes_per_step, m.comm_bytes_per_step / 3, 1);
  EXPECT_DOUBLE_EQ(m.wan_bytes_per_step, 0);
}

TEST(LinkBytes, AcrossSitesOnlyTheMiddlePhaseCrossesTheWan) {
  // Each node its own site: reduce-scatter and all-gather inside the site, 2 x (1/2) x 200 MB =
  // 200 MB; the all-reduce across the 2 sites of the 100 MB shards, 2 (2-1)/2 x 100 MB = 100 MB.
  const auto s = two_by_two("  sites: [{name: a, nodes: [0]}, {name: b, nodes: [1]}]\n"
                            "  wan: {bandwidth: 1Gb/s, latency: 10ms}\n");
  const auto m = simulate(s, "ddp").metrics;
  EXPECT_NEAR(m.comm_bytes_per_step, 300e6, 1);
  EXPECT_NEAR(m.intra_node_bytes_per_step, 200e6, 1);
  EXPECT_DOUBLE_EQ(m.inter_node_bytes_per_step, 0);
  EXPECT_NEAR(m.wan_bytes_per_step, 100e6, 1);
  // The three add up; summary and report carry them.
  const auto rows = cli::simulate_rows(s, false);
  const auto report = cli::report_markdown(s, rows);
  EXPECT_THAT(report, HasSubstr("| ddp | 300 MB | 200 MB | 0 B | 100 MB |"));
}

TEST(LinkBytes, ShardedAcrossSitesAThirdCrossesTheWan) {
  // FSDP's reduce-scatters and all-gathers over the same 2 sites, site by site: a reduce-scatter
  // of S sends S/2 inside the site and S/4 across the WAN (of 3S/4); an all-gather of a shard b
  // sends b across and 2b inside (of 3b). A third over the WAN either way, where a flat ring
  // crosses it on 2 of its 4 hops (half).
  const std::string sites = "  sites: [{name: a, nodes: [0]}, {name: b, nodes: [1]}]\n"
                            "  wan: {bandwidth: 1Gb/s, latency: 10ms}\n";
  const auto m = simulate(two_by_two(sites + "  collective_algorithm: auto\n"), "fsdp").metrics;
  ASSERT_GT(m.comm_bytes_per_step, 0);
  EXPECT_NEAR(m.wan_bytes_per_step, m.comm_bytes_per_step / 3, 1);
  EXPECT_NEAR(m.intra_node_bytes_per_step, 2 * m.comm_bytes_per_step / 3, 1);
  EXPECT_DOUBLE_EQ(m.inter_node_bytes_per_step, 0);
  const auto flat = simulate(two_by_two(sites + "  collective_algorithm: ring\n"), "fsdp").metrics;
  EXPECT_NEAR(flat.comm_bytes_per_step, m.comm_bytes_per_step, 1);
  EXPECT_NEAR(flat.wan_bytes_per_step, flat.comm_bytes_per_step / 2, 1);
}

} // namespace
} // namespace overlapsim
