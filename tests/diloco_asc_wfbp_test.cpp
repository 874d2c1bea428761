// diloco and asc-wfbp in simulation against hand calculations.
#include "test_util.h"

#include "algorithms/algorithm.h"
#include "algorithms/asc_wfbp.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// As tests/local_sgd_test.cpp: two nodes of one GPU of exactly 100 TFLOP/s, 1 TB/s HBM,
// 10 GB/s 10 us network; four layers of 25M parameters (bf16): forward 1 ms and backward 2 ms each,
// the AdamW step of the model 100M x 28 B / 1 TB/s = 2.8 ms.
scenario::Scenario four_layers() {
  return testing::four_blocks_on_two_nodes(2, 4);
}

TEST(Diloco, InnerStepsThenAveragedPseudoGradientAndOuterStep) {
  // Inner step: 4 + 8 + 2.8 = 14.8 ms. At the period's last step the parameters (200 MB) are
  // all-reduced, 2 x (10 us + 100 MB / 10 GB/s) = 20.02 ms, then the outer step streams params
  // (bf16), anchor and momentum (fp32) in and out: 100M x 2 x (2 + 4 + 4) B / 1 TB/s = 2 ms.
  // H = 2: (14.8 + 36.82) / 2 ms.
  const auto r = simulate(four_layers(), "diloco", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.0148 + 0.03682) / 2, 1e-6);
  // Memory: params 200 MB, grads 200 MB, AdamW state 100M x 12 B, outer anchor and momentum
  // 100M x 4 B each (optimizer state): 2.4 GB.
  EXPECT_NEAR(r.metrics.memory_breakdown[static_cast<int>(MemoryCategory::optimizer_state)],
              100e6 * 20, 1);
  EXPECT_NEAR(r.metrics.peak_memory_bytes, 2.4e9, 1);
}

TEST(Diloco, OptionsAreCheckedAndNamed) {
  scenario::AlgorithmSpec a;
  a.name = "diloco";
  a.where = "s.yaml:3";
  a.options["outer_momentum"] = scenario::AlgorithmOption{"1.5", "s.yaml:3"};
  EXPECT_THROW(make_algorithm(a), scenario::ScenarioError);
  a.options["outer_momentum"] = scenario::AlgorithmOption{"0.8", "s.yaml:3"};
  a.options["outer_lr"] = scenario::AlgorithmOption{"0.5", "s.yaml:3"};
  a.options["H"] = scenario::AlgorithmOption{"500", "s.yaml:3"};
  EXPECT_EQ(make_algorithm(a)->name(), "diloco");
}

TEST(AscWfbp, MergeRuleOnAlphaBetaCosts) {
  // bp 2 ms per layer from the output (L3 ends at 2, L2 at 4, L1 at 6, L0 at 8); all-reduce
  // 5.02 ms of which a = 20 us startup. L3 starts at 2 and ends at 7.02. L2 (ready 4) opens a
  // group starting at 7.02; L1 is ready at 6 < 7.02 + 0.02: merged; L0 at 8 is not: {L3} {L2 L1}
  // {L0}.
  LayerCosts c{{0.002, 0.002, 0.002, 0.002}, {0.00502, 0.00502, 0.00502, 0.00502}};
  const auto g = asc_wfbp_groups(c, 20e-6);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].first, 3);
  EXPECT_EQ(g[1].first, 1);
  EXPECT_EQ(g[1].last, 3);
  EXPECT_EQ(g[2].first, 0);
  // Nothing ready before a startup ends: one layer a group (plain WFBP).
  EXPECT_EQ(asc_wfbp_groups(LayerCosts{{1, 1, 1}, {0.1, 0.1, 0.1}}, 0.01).size(), 3u);
}

TEST(AscWfbp, GroupsOverlapTheBackwardAgainstDdpsBuckets) {
  // One channel (MG-WFBP's serial stream): fwd 0-4; bwd L3 4-6, all-reduce L3 6-11.02; bwd L2, L1
  // 6-10, all-reduce of the 100 MB group 2 x (10 us + 5 ms) = 10.02 ms: 11.02-21.04; bwd L0
  // 10-12, all-reduce 21.04-26.06; AdamW 2.8 ms: 28.86 ms.
  EXPECT_NEAR(simulate(four_layers(), "asc-wfbp", {{"simultaneous", "1"}}).metrics.iteration_time_s,
              0.02886, 1e-6);
  // Simultaneous communications (two channels): {L2, L1}, ready at 10, starts at once beside
  // L3's all-reduce instead of at 11.02, and L0 (ready at 12) beside it on the first channel once
  // L3's is done. The link then carries the 200 MB without a gap from 6 ms and pays the 20 us
  // startup once: 6 + 200 MB / 10 GB/s + 0.02 = 26.02 ms, + 2.8 ms AdamW = 28.82 ms.
  EXPECT_NEAR(simulate(four_layers(), "asc-wfbp").metrics.iteration_time_s, 0.02882, 1e-6);
  // DDP: each 50 MB layer is two 25 MB buckets of 2 x (10 us + 1.25 ms) = 2.52 ms; PyTorch's
  // default copies each bucket's gradients in (12.5M x 4 B / 1 TB/s = 50 us) before its
  // all-reduce, so the comm stream is busy from 6.05 ms: 6.05 + 8 x 2.52 = 26.21 ms; the copy
  // back (100M x 4 B / 1 TB/s = 0.4 ms) and AdamW (2.8 ms): 29.41 ms.
  EXPECT_NEAR(simulate(four_layers(), "ddp").metrics.iteration_time_s, 0.02941, 1e-6);
  EXPECT_NEAR(simulate(four_layers(), "ddp", {{"gradient_as_bucket_view", "true"}})
                  .metrics.iteration_time_s,
              0.02896, 1e-6);
}

} // namespace
} // namespace overlapsim
