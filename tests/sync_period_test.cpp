// The measuring window of algorithms that synchronise every H steps (issue 27.3): a written
// `training.steps` shorter than a period is an error naming both keys, the default window grows to
// whole periods, and a written window that cuts a period short carries a warning.
#include "test_util.h"

#include "algorithms/sync_period.h"
#include "cli/run_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;
using namespace overlapsim::testing;

// kFourBlocks on two nodes; `training` is the training map's contents.
scenario::Scenario local_sgd(const std::string& training, const std::string& algorithms) {
  return scenario_from("name: window\n" + round_cluster(2) + kFourBlocks +
                       "training: {micro_batch: 1, seq_len: 1" + training + "}\nalgorithms:\n" +
                       algorithms);
}

std::string error_of_rows(const scenario::Scenario& s) {
  try {
    cli::simulate_rows(s, false);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SyncPeriod, WrittenStepsShorterThanAPeriodNameBothKeys) {
  // local-sgd, H = 10 by default, 3 steps: the window would hold no averaging at all.
  EXPECT_THAT(error_of_rows(local_sgd(", steps: 3", "  - local-sgd\n")),
              HasSubstr("test.yaml:12: key 'training.steps': 3 steps are shorter than one period "
                        "of 'local-sgd' (key 'algorithms.local-sgd.H' = 10 (its default))"));
  // A written H is named with its line.
  EXPECT_THAT(error_of_rows(local_sgd(", steps: 3", "  - ddp\n  - {name: dreamddp, H: 4}\n")),
              HasSubstr("3 steps are shorter than one period of 'dreamddp' (key "
                        "'algorithms.dreamddp.H' = 4 (test.yaml:15)): the window would hold none "
                        "of its synchronisations; give at least 4 steps"));
  // Algorithms that synchronise every step take any window.
  EXPECT_EQ(error_of_rows(local_sgd(", steps: 3", "  - ddp\n  - acco\n  - demo\n")), "no error");
}

TEST(SyncPeriod, TheDefaultWindowGrowsToWholePeriods) {
  const auto defaulted = cli::simulate_rows(local_sgd("", "  - {name: diloco, H: 7}\n"), false);
  ASSERT_EQ(defaulted.size(), 1u);
  ASSERT_EQ(defaulted[0].error, "");
  EXPECT_EQ(defaulted[0].metrics.steps, 21); // the default 20 rounded up to 3 periods of 7
  // Two whole periods written by hand average as often per step: 3 syncs / 21 = 2 / 14.
  const auto written =
      cli::simulate_rows(local_sgd(", steps: 14", "  - {name: diloco, H: 7}\n"), false);
  EXPECT_EQ(written[0].metrics.steps, 14);
  EXPECT_GT(written[0].metrics.comm_bytes_per_step, 0);
  EXPECT_DOUBLE_EQ(defaulted[0].metrics.comm_bytes_per_step,
                   written[0].metrics.comm_bytes_per_step);
  EXPECT_FALSE(written[0].extra.contains("warnings"));
}

TEST(SyncPeriod, AWrittenWindowThatCutsAPeriodShortWarns) {
  const auto rows =
      cli::simulate_rows(local_sgd(", steps: 10", "  - {name: local-sgd, H: 7}\n"), false);
  ASSERT_EQ(rows[0].error, "");
  EXPECT_EQ(rows[0].metrics.steps, 10); // the user's window stays
  ASSERT_TRUE(rows[0].extra.contains("warnings"));
  EXPECT_THAT(rows[0].extra["warnings"][0].get<std::string>(),
              HasSubstr("training.steps = 10 is not a whole number of periods of 'local-sgd' (H = "
                        "7): its window holds 1 synchronisation in 10 steps"));
}

TEST(SyncPeriod, MeasuredStepsFollowsThePeriodOfEachAlgorithm) {
  scenario::TrainingSpec t;
  t.steps = 20; // the default, not written
  scenario::AlgorithmSpec spec;
  spec.name = spec.label = "streaming-diloco";
  spec.options["H"] = {"30", "x.yaml:3"};
  EXPECT_EQ(measured_steps(t, spec, *make_algorithm(spec)).steps, 30);
  spec.options["H"] = {"5", "x.yaml:3"};
  EXPECT_EQ(measured_steps(t, spec, *make_algorithm(spec)).steps, 20);
  scenario::AlgorithmSpec ddp;
  ddp.name = ddp.label = "ddp";
  t.steps = 3;
  t.steps_where = "x.yaml:9";
  EXPECT_EQ(measured_steps(t, ddp, *make_algorithm(ddp)).steps, 3);
}

} // namespace
} // namespace overlapsim
