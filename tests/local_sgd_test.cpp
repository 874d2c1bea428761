// The local-SGD family (FLSGD, PLSGD-ENP, DreamDDP) in simulation against hand calculations.
#include "test_util.h"

#include "algorithms/algorithm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// Two nodes of one GPU of exactly 100 TFLOP/s (efficiency 1), 1 TB/s HBM, 10 GB/s 10 us network;
// four layers of 25M parameters: forward 1 ms and backward 2 ms each, a layer's all-reduce
// 2 x (10 us + 50 MB / 2 / 10 GB/s) = 5.02 ms, its AdamW step 25M x 28 B / 1 TB/s = 0.7 ms, and
// after its average the reload of its fp32 master copy on the communication stream, 25M x (2 + 4)
// B / 1 TB/s = 0.15 ms; when that runs beside a compute op the two share the GPU (each at half
// speed while both run: the reload takes 0.3 ms and the compute op 0.15 ms longer).
// warmup_steps and steps are multiples of H = 2, so the window holds whole periods.
scenario::Scenario four_layers() {
  return testing::four_blocks_on_two_nodes(2, 4, "[{name: local-sgd, H: 2}]");
}

TEST(LocalSgd, FlsgdAveragesEveryLayerAfterThePeriodsLastStep) {
  // Step 0: 4 + 8 + 2.8 = 14.8 ms; step 1 the same plus four all-reduces of 5.02 ms, each
  // followed by its layer's master reload of 0.15 ms: 35.48 ms; 50.28 ms a period.
  const auto r = simulate(four_layers(), "local-sgd", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.0148 + 0.03548) / 2, 1e-5);
}

TEST(LocalSgd, PlsgdEnpOverlapsEachGroupWithTheRestOfTheBackward) {
  // Groups {L3, L2} at step 0 and {L1, L0} at step 1 (Definition 1).
  // Step 0: fwd 0-4, bwd L3 4-6, update 6-6.7, all-reduce L3 6.7-11.72; bwd L2 6.7-8.7, update
  //   8.7-9.4; bwd L1, L0 9.4-13.55 (the reload of L3 shares 11.72-12.02 with it);
  //   all-reduce L2 12.02-17.04, reload 17.04-17.19; update L0-L1 13.55-14.95: 17.19 ms.
  // Step 1: bwd L3, L2 4-8, L1 8-10, update 10-10.7, all-reduce 10.7-15.72; bwd L0 10.7-12.7,
  //   update 12.7-13.4; update L2-L3 13.4-14.8; reload L1 15.72-15.87, all-reduce L0
  //   15.87-20.89, reload 20.89-21.04: 21.04 ms.
  const auto r = simulate(four_layers(), "plsgd-enp", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.01719 + 0.02104) / 2, 1e-5);
}

TEST(LocalSgd, DreamddpUsesAlgorithm2sSchedule) {
  // Estimated costs bp 2 ms, comm 5.02 ms per layer; of the sequential splits Algorithm 2 explores,
  // {L3} {L2, L1, L0} has the least wait (0 + 11.06 ms, against 4.04 + 8.04 for PLSGD's split).
  // Step 0: all-reduce L3 6.7-11.72 under the backward, its reload 11.72-12.02 beside it, so the
  //   backward ends 0.15 ms late and the updates at 14.95: 14.95 ms. Step 1: bwd to L2 4-8,
  //   update 8.7, all-reduce L2 8.7-13.72, reload 13.72-14.02 beside the updates (which end at
  //   14.95), all-reduce L1 14.02-19.04, reload 19.19, all-reduce L0 19.19-24.21, reload
  //   24.36: 24.36 ms.
  const auto r = simulate(four_layers(), "dreamddp", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.01495 + 0.02436) / 2, 1e-5);
}

TEST(LocalSgd, PeriodIsAnOptionOfEveryMember) {
  for (const char* name : {"local-sgd", "plsgd-enp", "dreamddp"}) {
    scenario::AlgorithmSpec a;
    a.name = name;
    a.where = "s.yaml:3";
    a.options["H"] = scenario::AlgorithmOption{"0", "s.yaml:3"};
    EXPECT_THROW(make_algorithm(a), scenario::ScenarioError) << name;
    a.options["H"] = scenario::AlgorithmOption{"5", "s.yaml:3"};
    EXPECT_EQ(make_algorithm(a)->name(), name);
  }
}

TEST(LocalSgd, PaperScenariosLoad) {
  // The sweep also carries streaming-diloco.
  for (const auto& [file, count] : {std::pair{"dreamddp-8x4-2080ti-1GBps.yaml", 7u},
                                    {"dreamddp-4x8-a6000-20GBps.yaml", 7u},
                                    {"dreamddp-bandwidth-sweep.yaml", 8u}}) {
    const auto s =
        scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/" + file);
    ASSERT_EQ(s.algorithms.size(), count) << file;
    for (const auto& a : s.algorithms)
      EXPECT_EQ(make_algorithm(a)->name(), a.name) << file;
  }
}

} // namespace
} // namespace overlapsim
