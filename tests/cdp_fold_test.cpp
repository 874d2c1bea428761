// CDP at scale (issue 64.2): the single-GPU setting, each GPU a data-parallel replica of one
// device's cycle, folds as rank classes and equals the full simulation; the settings that cut the
// model into a stage per GPU cannot fold, and the work budget's refusal says what would fit.
#include "cli/advice_work.h"
#include "cli/cdp_work.h"
#include "cli/work_budget.h"
#include "sim/rank_classes.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// 4 nodes x 2 GPUs of test_util.h's round cluster, its four 25M-parameter blocks, 2 micro-batches
// a step (two stages under the single-GPU setting).
std::string four_by_two(const std::string& extra = "") {
  return "name: cdp-fold\n" + testing::round_cluster(4, 2, extra) + testing::kFourBlocks +
         "training: {micro_batch: 1, seq_len: 1, grad_accum: 2, warmup_steps: 1, steps: 2, "
         "optimizer: adamw}\nalgorithms: [ddp]\n";
}

scenario::AlgorithmSpec cdp(const std::string& name, const std::string& setting) {
  scenario::AlgorithmSpec a;
  a.name = a.label = name;
  if (!setting.empty())
    a.options["setting"] = scenario::AlgorithmOption{setting, "test"};
  return a;
}

TEST(CdpFold, TheSingleGpuSettingFoldsAndEqualsTheFullSimulation) {
  for (const char* rule : {"cdp-v1", "cdp-v2"}) {
    const auto folded_scenario = testing::scenario_from(four_by_two());
    const auto classes =
        sim::choose_rank_classes(folded_scenario, *make_algorithm(cdp(rule, "single-gpu")));
    EXPECT_TRUE(classes.folded) << rule;
    EXPECT_EQ(classes.simulated_ranks(), 2) << rule;
    const auto folded =
        testing::simulate(folded_scenario, rule, {{"setting", "single-gpu"}}).metrics;
    const auto full =
        testing::simulate(testing::scenario_from(four_by_two("  rank_classes: off\n")), rule,
                          {{"setting", "single-gpu"}})
            .metrics;
    EXPECT_NEAR(folded.iteration_time_s, full.iteration_time_s, 1e-9 * full.iteration_time_s)
        << rule;
    EXPECT_DOUBLE_EQ(folded.peak_memory_bytes, full.peak_memory_bytes) << rule;
    EXPECT_NEAR(folded.comm_bytes_per_step, full.comm_bytes_per_step,
                1e-9 * full.comm_bytes_per_step)
        << rule;
    EXPECT_NEAR(folded.idle_fraction_mean, full.idle_fraction_mean, 1e-9) << rule;
  }
}

TEST(CdpFold, AStagePerGpuRunsEveryGpu) {
  const auto s = testing::scenario_from(four_by_two());
  for (const char* setting : {"", "multi-gpu", "zero", "model-parallel"}) {
    const auto classes = sim::choose_rank_classes(s, *make_algorithm(cdp("cdp-v2", setting)));
    EXPECT_FALSE(classes.folded) << setting;
    EXPECT_EQ(classes.why_full, "cdp-v2 sends point to point") << setting;
  }
}

// 2,048 DGX H100 nodes (16,384 GPUs), GPT-Neo 2.7B (34 layers), 1 + 10 steps.
scenario::Scenario frontier(const std::string& algorithms) {
  return testing::scenario_from("name: cdp-frontier\n"
                                "cluster: {preset: dgx-h100, nodes: 2048}\n"
                                "model: {preset: gpt-neo-2.7b, dtype: bf16}\n"
                                "training: {micro_batch: 1, seq_len: 2048, warmup_steps: 1, "
                                "steps: 10}\n"
                                "algorithms: " +
                                algorithms + "\n");
}

TEST(CdpFold, TheEstimateCountsAStagePerGpuAndTheSquareOfTheGpus) {
  const auto e = cli::estimate_work(frontier("[cdp-v2]"));
  const auto& w = e.simulations.front();
  ASSERT_EQ(w.label, "cdp-v2");
  EXPECT_DOUBLE_EQ(w.gpus, 16384);
  // Per GPU and step: a forward and a backward of each of 16,384 stages and the optimizer's 4,
  // and two laps of a message per stage.
  EXPECT_DOUBLE_EQ(w.compute_ops, 16384.0 * 11 * (2 * 16384 + 4));
  EXPECT_DOUBLE_EQ(w.collective_ops, 16384.0 * 11 * (2 * 16384));
  EXPECT_THAT(e.breakdown, HasSubstr("16.38k GPUs x 11 steps x (16.38k stages x 2 + 32.77k "
                                     "messages)"));
  // The single-gpu setting with one micro-batch: one stage, 8 of 16,384 GPUs, one all-reduce.
  auto single = cli::estimate_work(frontier("[{name: cdp-v2, setting: single-gpu}]"));
  const auto& s1 = single.simulations.front();
  EXPECT_DOUBLE_EQ(s1.gpus, 8);
  EXPECT_DOUBLE_EQ(s1.compute_ops, 8.0 * 11 * (2 * 1 * 1 + 4));
  EXPECT_DOUBLE_EQ(s1.collective_ops, 8.0 * 11);
}

TEST(CdpFold, TheBudgetsRefusalSaysWhatWouldFit) {
  // 4N^2 + 4N <= 2e7 / 11 at N = 673 (4 x 673^2 + 4 x 673 = 1,814,408 <= 1,818,182), but the
  // model's 34 layers allow 34 stages at most.
  const auto s = frontier("[cdp-v2]");
  EXPECT_EQ(cli::cdp_most_gpus(s, cli::kWorkBudgetOps), 34);
  EXPECT_EQ(cli::cdp_most_gpus(s, 1e12), 34);
  try {
    cli::check_work_budget(s, false);
    FAIL() << "not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("cdp-v2 cuts the model into a stage per GPU (16.38k stages; "
                                    "the model has 34 layers)"));
    EXPECT_THAT(e.what(), HasSubstr("it fits on at most 34 GPUs here"));
    EXPECT_THAT(e.what(), HasSubstr("`setting: single-gpu`"));
    EXPECT_THAT(e.what(), HasSubstr("8 GPUs simulated, about 616 ops"));
  }
}

TEST(CdpFold, MostGpusFollowsTheBudgetOnADeepModel) {
  // A 100,000-layer model: the budget binds. 2e7 / 11 = 1,818,181.8; N = 673.
  auto s = frontier("[cdp-v2]");
  s.model.spec.layers.resize(100000, s.model.spec.layers.back());
  EXPECT_EQ(cli::cdp_most_gpus(s, cli::kWorkBudgetOps), 673);
}

TEST(AdviceWork, DdpOfTwoPointSevenBillionDoesNotFitAnH100AndTheProbeIsCounted) {
  const auto s = frontier("[ddp]");
  // 2.7B parameters x (3 x 2 B + 12 B of AdamW) = 48.7 GB, plus a sample's activations at 2,048
  // tokens: past the H100's 75 GB available (the run's own peak: 79.4 GB, docs/ARCHITECTURE.md).
  EXPECT_GT(cli::ddp_memory_lower_bound(s), s.cluster.gpu.memory_available());
  EXPECT_TRUE(cli::memory_advice_probe_runs(s));
  const auto e = cli::estimate_work(s);
  ASSERT_EQ(e.simulations.size(), 2U);
  EXPECT_EQ(e.simulations.back().label, "zero1 (memory advice)");
  EXPECT_DOUBLE_EQ(e.simulations.back().gpus, 8); // folded, as the probe runs
  // Listing a sharded algorithm: it fits, no probe.
  EXPECT_FALSE(cli::memory_advice_probe_runs(frontier("[ddp, fsdp]")));
}

} // namespace
} // namespace overlapsim
