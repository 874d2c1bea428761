// Issue 64, "done when": the work estimate within 2x of the frontier bench's rows with WAN sites
// of fat trees (cli/work_budget.h: kSecondsPerHeldFlow, a fit) and of ACCO's default cap on a
// round's micro-batches (algorithms/acco.cpp), each pinned against a hand count here.
#include "cli/work_budget.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace overlapsim {
namespace {

// Three sites of `per_site` DGX H100 nodes at 10 Gbit/s, GPT-Neo 2.7B (202.3 calls of 26 MB a
// step at torch's 25 MiB buckets), 1 + 10 steps; `extra` goes into the cluster map.
scenario::Scenario three_sites(int per_site, const std::string& extra,
                               const std::string& algorithms = "[ddp]") {
  std::string sites;
  for (int site = 0; site < 3; ++site) {
    sites += std::string(site ? ", " : "") + "{name: s" + std::to_string(site) + ", nodes: [";
    for (int n = 0; n < per_site; ++n)
      sites += (n ? ", " : "") + std::to_string(site * per_site + n);
    sites += "]}";
  }
  return testing::scenario_from("name: sites\n"
                                "cluster: {preset: dgx-h100, nodes: " +
                                std::to_string(3 * per_site) + ", wan: wan-10gbit, sites: [" +
                                sites + "]" + extra +
                                "}\n"
                                "model: {preset: gpt-neo-2.7b, dtype: bf16}\n"
                                "training: {micro_batch: 1, seq_len: 2048, warmup_steps: 1, "
                                "steps: 10}\n"
                                "algorithms: " +
                                algorithms + "\n");
}

constexpr const char* kRailFatTree =
    ", fabric: {topology: fat_tree, oversubscription: 2, placement: rail}";

const cli::SimulationWork& work_of(const cli::WorkEstimate& e, const std::string& label) {
  for (const auto& w : e.simulations)
    if (w.label == label)
      return w;
  throw std::runtime_error("no simulation " + label);
}

TEST(WorkEstimateSites, AFoldedSiteOfFatTreesRoutesEveryGpusFlowTwiceACall) {
  // Equal sites fold site by site: one node (8 GPUs) of site 0 runs. Each call's reduce-scatter
  // and all-gather inside the sites route a flow per GPU of site 0: 2 x 4 nodes x 8 = 64 flows,
  // over 11 steps x 202.3 calls.
  const auto tree = work_of(cli::estimate_work(three_sites(4, kRailFatTree)), "ddp");
  EXPECT_DOUBLE_EQ(tree.gpus, 8);
  EXPECT_DOUBLE_EQ(tree.held_flows_per_call, 2 * 4 * 8);
  EXPECT_DOUBLE_EQ(tree.held_flows, 64 * 11 * tree.collectives_per_step);
  EXPECT_NEAR(tree.collectives_per_step, 202.3, 0.05);
  // 0.1 us a flow above the same sites on a star: 64 x 11 x 202.3 x 0.1 us = 14.2 ms.
  const auto star = work_of(cli::estimate_work(three_sites(4, "")), "ddp");
  EXPECT_DOUBLE_EQ(star.held_flows, 0);
  EXPECT_NEAR(cli::predicted_seconds(tree) - cli::predicted_seconds(star), 0.1e-6 * 64 * 11 * 202.3,
              1e-5);
  // A flat ring across sites runs no site phases; in full the flows are the simulated GPUs'
  // own (the per-call terms).
  EXPECT_DOUBLE_EQ(work_of(cli::estimate_work(three_sites(4, std::string(kRailFatTree) +
                                                                 ", collective_algorithm: ring")),
                           "ddp")
                       .held_flows,
                   0);
  EXPECT_DOUBLE_EQ(
      work_of(cli::estimate_work(three_sites(4, std::string(kRailFatTree) + ", rank_classes: off")),
              "ddp")
          .held_flows,
      0);
}

TEST(WorkEstimateSites, TheFrontierRowRoutesTwoSitesFlows) {
  // The frontier bench's equal sites (3 x 682 nodes, 16,368 GPUs), statistical with jitter and
  // a 1.5x straggler in a site: 16 GPUs run in two sites (the straggler's runs apart,
  // sim/site_classes.h), so two sites' phases run each call: 2 x 2 x 5,456 = 21,824 flows,
  // 4,450 calls (ddp) = 9.7 s at 0.1 us (measured: 3 steps, ddp and its probe, 3.42 s CPU
  // against 0.90 s on a star, 2.5 s for 1,214 calls).
  const auto s = three_sites(682, std::string(kRailFatTree) +
                                      ", rank_classes: statistical, jitter: {distribution: "
                                      "lognormal, sigma: 0.05}, stragglers: [{gpu: 259, "
                                      "slowdown: 1.5}]");
  const auto w = work_of(cli::estimate_work(s), "ddp");
  EXPECT_DOUBLE_EQ(w.gpus, 16);
  EXPECT_DOUBLE_EQ(w.held_flows_per_call, 2 * 2 * 682 * 8);
  EXPECT_NEAR(0.1e-6 * w.held_flows, 0.1e-6 * 21824 * 11 * 202.3, 1e-3);
}

TEST(WorkEstimateSites, AccoStopsARoundAtItsDefaultCap) {
  // A round's all-reduce over the 10 Gbit/s WAN takes seconds, tens of micro-batches; ACCO stops
  // at 4 x grad_accum (1) over its 2 rounds = 2 a round (algorithms/acco.cpp), 4 a step (the
  // frontier bench's acco measured 4.0 a step), unless max_micro_batches says otherwise.
  const auto e = cli::estimate_work(
      three_sites(4, kRailFatTree, "[acco, {name: acco, label: free, max_micro_batches: 0}]"));
  EXPECT_DOUBLE_EQ(work_of(e, "acco").micro_batches, 4);
  EXPECT_GT(work_of(e, "free").micro_batches, 40);
}

} // namespace
} // namespace overlapsim
