// DreamDDP's bubble filling (Sec. 3.4) in the dreamddp program, on the authors' GPT-2 profile:
// more layer averages per period at the same iteration time.
#include "test_util.h"

#include "algorithms/layer_cost_estimate.h"
#include "algorithms/partial_sync_schedule.h"
#include "scenario/loader.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::simulate;

// Layer averages worker 0 sent in the steady-state window (steps 1 .. 20 after the default warmup
// step: every local iteration h of H = 10 twice).
int layer_averages(const Trace& trace) {
  int n = 0;
  for (const auto& e : trace.events)
    if (e.worker == 0 && e.stream == StreamKind::comm && e.step >= 1 && e.step <= 20 &&
        trace.names[static_cast<std::size_t>(e.name)].starts_with("average layer"))
      ++n;
  return n;
}

TEST(BubbleFilling, MoreLayerAveragesAtTheSameIterationTime) {
  const auto s = scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) +
                                         "/scenarios/dreamddp-gpt2-authors-profile.yaml");
  ASSERT_EQ(s.training.steps, 20);
  const LayerCosts costs = estimate_layer_costs(s);
  const auto extra = bubble_filling(costs, dreamddp_schedule(costs, 10), 10);
  std::size_t filled = 0;
  for (const auto& e : extra)
    filled += e.size();
  // Algorithm 2's schedule leaves bubbles that 38 layer all-reduces a period fill (iterations
  // 1 .. 9 each re-average some of the output-side layers averaged earlier in the period).
  EXPECT_EQ(filled, 38u);

  const std::map<std::string, std::string> plain{{"H", "10"}};
  const std::map<std::string, std::string> filling{{"H", "10"}, {"bubble_filling", "true"}};
  const auto a = simulate(s, "dreamddp", plain);
  const auto b = simulate(s, "dreamddp", filling);
  // Without it every layer is averaged once a period: 125 x 2 periods; with it 38 more a period,
  // and the simulated iteration time (0.076974 s in the cost model, see layer_table_model_test)
  // does not move: every added all-reduce ends before its iteration's backward would have.
  EXPECT_EQ(layer_averages(a.trace), 250);
  EXPECT_EQ(layer_averages(b.trace), 250 + 2 * static_cast<int>(filled));
  EXPECT_NEAR(b.metrics.iteration_time_s, a.metrics.iteration_time_s,
              1e-6 * a.metrics.iteration_time_s);
}

} // namespace
} // namespace overlapsim
