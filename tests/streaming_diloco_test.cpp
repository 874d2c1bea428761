// streaming-diloco in simulation against hand calculations: the staggered fragment schedule, the
// all-reduce hidden behind tau inner steps when it fits and the wait when it does not, the memory.
#include "test_util.h"

#include "algorithms/algorithm.h"
#include "algorithms/streaming_diloco.h"
#include "scenario/loader.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// As tests/diloco_asc_wfbp_test.cpp: two nodes of one GPU of exactly 100 TFLOP/s, 1 TB/s HBM,
// 10 GB/s 10 us network; four layers of 25M parameters (bf16). An inner step is forward 4 ms,
// backward 8 ms and the AdamW step 100M x 28 B / 1 TB/s = 2.8 ms: 14.8 ms. One warmup step, then
// 8 steps (c = 2 .. 9 inner steps done): whole periods of H = 4 for every fragment.
scenario::Scenario four_layers() {
  return testing::four_blocks_on_two_nodes(1, 8);
}

constexpr int kOptimizerState = static_cast<int>(MemoryCategory::optimizer_state);
constexpr int kBuffers = static_cast<int>(MemoryCategory::buffers);

TEST(StreamingDiloco, FragmentsStartStaggeredByHOverP) {
  // H = 4, P = 2: fragment 0 at c = 4, 8, fragment 1 (offset 2) at c = 2, 6; the one at c = 10
  // would merge at 11, after the run's 10 steps, so it does not start.
  const auto s = streaming_sync_schedule(10, 4, 2, 1);
  ASSERT_EQ(s.size(), 4u);
  const int want[4][2] = {{2, 1}, {4, 0}, {6, 1}, {8, 0}};
  for (std::size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].after_step, want[i][0]) << i;
    EXPECT_EQ(s[i].fragment, want[i][1]) << i;
  }
  // P = 3: offsets 4 x 1 / 3 = 1 and 4 x 2 / 3 = 2; tau = 0 lets the last step sync.
  const auto t = streaming_sync_schedule(4, 4, 3, 0);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].after_step, 1);
  EXPECT_EQ(t[0].fragment, 1);
  EXPECT_EQ(t[1].after_step, 2);
  EXPECT_EQ(t[2].after_step, 4);
  EXPECT_EQ(t[2].fragment, 0);
}

TEST(StreamingDiloco, FragmentAllReduceHiddenBehindOneInnerStep) {
  // P = 2 fragments of 2 layers (50M parameters, 100 MB), H = 4, tau = 1. A sync copies the
  // fragment to the in-flight buffer, 50M x (2 + 2) B / 1 TB/s = 0.2 ms, and its all-reduce,
  // 2 x (10 us + 50 MB / 10 GB/s) = 10.02 ms, runs under the next inner step (14.8 ms); the merge
  // then streams the average (bf16), anchor and momentum (fp32) and local parameters (bf16) in and
  // out: 50M x 2 x 12 B / 1 TB/s = 1.2 ms. The window holds 4 syncs (c = 2, 4, 6, 8) and their 4
  // merges: (8 x 14.8 + 4 x 0.2 + 4 x 1.2) / 8 = 15.5 ms.
  const auto r = simulate(four_layers(), "streaming-diloco",
                          {{"H", "4"}, {"fragments", "2"}, {"overlap_steps", "1"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, 0.0155, 1e-6);
  // Memory: params 200 MB, grads 200 MB, AdamW 100M x 12 B, anchor and momentum 100M x 4 B each
  // (diloco's 2.4 GB), plus one fragment in flight at a time (phases 0 and 2 of the period): 100
  // MB.
  EXPECT_NEAR(r.metrics.memory_breakdown[kOptimizerState], 100e6 * 20, 1);
  EXPECT_NEAR(r.metrics.memory_breakdown[kBuffers], 100e6, 1);
  EXPECT_NEAR(r.metrics.peak_memory_bytes, 2.5e9, 1);
}

TEST(StreamingDiloco, WholeModelAllReduceDoesNotFitInOneInnerStep) {
  // P = 1, H = 4, tau = 1: the copy is 100M x 4 B / 1 TB/s = 0.4 ms, the all-reduce of 200 MB
  // 2 x (10 us + 100 MB / 10 GB/s) = 20.02 ms, of which the next inner step hides 14.8 ms: the
  // merge waits 5.22 ms, then takes 100M x 24 B / 1 TB/s = 2.4 ms. Syncs at c = 4 and 8:
  // (8 x 14.8 + 2 x (0.4 + 5.22 + 2.4)) / 8 = 16.805 ms.
  const auto r = simulate(four_layers(), "streaming-diloco",
                          {{"H", "4"}, {"fragments", "1"}, {"overlap_steps", "1"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, 0.016805, 1e-6);
  EXPECT_NEAR(r.metrics.memory_breakdown[kBuffers], 200e6, 1); // the whole model in flight
  // Without overlap every sync blocks: P = 2, tau = 0, 4 syncs of 0.2 + 10.02 + 1.2 ms:
  // (8 x 14.8 + 4 x 11.42) / 8 = 20.51 ms.
  const auto blocking = simulate(four_layers(), "streaming-diloco",
                                 {{"H", "4"}, {"fragments", "2"}, {"overlap_steps", "0"}});
  EXPECT_NEAR(blocking.metrics.iteration_time_s, 0.02051, 1e-6);
}

TEST(StreamingDiloco, OptionsAreCheckedAndNamed) {
  const auto made = [](std::map<std::string, std::string> options) {
    scenario::AlgorithmSpec a;
    a.name = "streaming-diloco";
    a.where = "s.yaml:3";
    for (auto& [k, v] : options)
      a.options[k] = scenario::AlgorithmOption{v, "s.yaml:3"};
    return make_algorithm(a);
  };
  const auto message = [&](std::map<std::string, std::string> options) -> std::string {
    try {
      made(std::move(options));
    } catch (const scenario::ScenarioError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({{"H", "4"}, {"overlap_steps", "5"}}).find("overlap_steps"), std::string::npos);
  EXPECT_NE(message({{"alpha", "1.5"}}).find("alpha"), std::string::npos);
  EXPECT_NE(message({{"fragments", "0"}}).find("fragments"), std::string::npos);
  EXPECT_NE(message({{"outer_momentum", "2"}}).find("outer_momentum"), std::string::npos);
  EXPECT_NE(message({{"inner_lr", "2"}}).find("inner_lr"), std::string::npos);
  EXPECT_EQ(made({{"H", "4"}, {"overlap_steps", "4"}, {"alpha", "0"}})->name(), "streaming-diloco");
  // More fragments than layers is found when the model is known.
  try {
    simulate(four_layers(), "streaming-diloco", {{"fragments", "5"}});
    ADD_FAILURE() << "5 fragments of 4 layers accepted";
  } catch (const std::exception& e) { // the simulator wraps the ScenarioError
    EXPECT_NE(std::string(e.what()).find("algorithms.streaming-diloco.fragments"),
              std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace overlapsim
