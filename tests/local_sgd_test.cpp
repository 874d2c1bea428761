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
// 2 x (10 us + 50 MB / 2 / 10 GB/s) = 5.02 ms, its AdamW step 25M x 28 B / 1 TB/s = 0.7 ms.
// warmup_steps and steps are multiples of H = 2, so the window holds whole periods.
spec::Scenario four_layers() {
  return scenario_from(R"(name: local-sgd
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}
  intra_node: {bandwidth: 100GB/s, latency: 1us}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
model:
  layers:
    - {name: block, params: 25M, fwd_flops_per_sample: 100G, repeat: 4}
training: {micro_batch: 1, seq_len: 1, warmup_steps: 2, steps: 4, optimizer: adamw}
algorithms: [{name: local-sgd, H: 2}]
)");
}

TEST(LocalSgd, FlsgdAveragesEveryLayerAfterThePeriodsLastStep) {
  // Step 0: 4 + 8 + 2.8 = 14.8 ms; step 1 the same plus four all-reduces of 5.02 ms: 34.88 ms;
  // 49.68 ms a period.
  const auto r = simulate(four_layers(), "local-sgd", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.0148 + 0.03488) / 2, 1e-5);
}

TEST(LocalSgd, PlsgdEnpOverlapsEachGroupWithTheRestOfTheBackward) {
  // Groups {L3, L2} at step 0 and {L1, L0} at step 1 (Definition 1).
  // Step 0: fwd 0-4, bwd L3 4-6, update 6-6.7, all-reduce L3 6.7-11.72; bwd L2 6.7-8.7, update
  //   8.7-9.4, all-reduce L2 11.72-16.74; bwd L1, L0 9.4-13.4, update L0-L1 13.4-14.8: 16.74 ms.
  // Step 1: bwd L3, L2 4-8, L1 8-10, update 10-10.7, all-reduce 10.7-15.72; bwd L0 10.7-12.7,
  //   update 12.7-13.4, all-reduce 15.72-20.74; update L2-L3 13.4-14.8: 20.74 ms.
  const auto r = simulate(four_layers(), "plsgd-enp", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.01674 + 0.02074) / 2, 1e-5);
}

TEST(LocalSgd, DreamddpUsesAlgorithm2sSchedule) {
  // Estimated costs bp 2 ms, comm 5.02 ms per layer; of the sequential splits Algorithm 2 explores,
  // {L3} {L2, L1, L0} has the least wait (0 + 11.06 ms, against 4.04 + 8.04 for PLSGD's split).
  // Step 0: all-reduce L3 6.7-11.72 under the backward, updates to 14.8: 14.8 ms. Step 1: bwd to
  //   L2 4-8, update 8.7, all-reduces L2 8.7-13.72, L1 13.72-18.74, L0 18.74-23.76: 23.76 ms.
  const auto r = simulate(four_layers(), "dreamddp", {{"H", "2"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, (0.0148 + 0.02376) / 2, 1e-5);
}

TEST(LocalSgd, PeriodIsAnOptionOfEveryMember) {
  for (const char* name : {"local-sgd", "plsgd-enp", "dreamddp"}) {
    spec::AlgorithmSpec a;
    a.name = name;
    a.where = "s.yaml:3";
    a.options["H"] = spec::AlgorithmOption{"0", "s.yaml:3"};
    EXPECT_THROW(make_algorithm(a), spec::ScenarioError) << name;
    a.options["H"] = spec::AlgorithmOption{"5", "s.yaml:3"};
    EXPECT_EQ(make_algorithm(a)->name(), name);
  }
}

TEST(LocalSgd, PaperScenariosLoad) {
  for (const char* file : {"dreamddp-8x4-2080ti-1GBps.yaml", "dreamddp-4x8-a6000-20GBps.yaml",
                           "dreamddp-bandwidth-sweep.yaml"}) {
    const auto s = spec::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/" + file);
    ASSERT_EQ(s.algorithms.size(), 7u) << file;
    for (const auto& a : s.algorithms)
      EXPECT_EQ(make_algorithm(a)->name(), a.name) << file;
  }
}

} // namespace
} // namespace overlapsim
