// How many micro-batches fit beside ACCO's and DPU's rounds (issue 66.5): the compute stream runs
// beside the round's reduce-scatter and all-gather at 1 - their kinds' comm_interference, so a
// round of transfers holds that many fewer micro-batches. Pinned by hand.
#include "scenario/calibration.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// Two nodes of one GPU on a 1 GB/s, 10 us network; a profile prices a micro-batch at 33 ms
// (l0 10 + 20 ms, l1 1 + 2 ms), the optimizer step at nothing. DPU's round moves l0 + l1's
// 101M bf16 gradients: a reduce-scatter and an all-gather of 202 MB over 2 ranks, each
// 10 us + 101 MB / 1 GB/s = 101.01 ms.
struct Rounds {
  std::vector<int> micro_batches; // worker 0's, per step past the first
  double forward_s = 0;           // a steady round's second micro-batch (beside the reduce-scatter)
  double backward_s = 0;
  double reduce_scatter_s = 0;
};

Rounds dpu_rounds(const testing::ScratchDir& dir, double share) {
  scenario::Calibration c;
  c.model = "rounds";
  c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
  for (const char* op : {"reduce_scatter", "all_gather"})
    c.interference_by_op[op].comm_interference = share;
  const auto path = dir / ("rounds-" + std::to_string(share) + ".json");
  std::ofstream(path) << scenario::calibration_json(c);
  const auto s = scenario_from("name: rounds\ncluster:\n  nodes: 2\n  gpus_per_node: 1\n"
                               "  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, "
                               "hbm_bandwidth: 1TB/s}\n"
                               "  inter_node: {bandwidth: 1GB/s, latency: 10us}\n"
                               "  collectives: fused\n"
                               "model:\n  profile: " +
                               path.string() +
                               "\n  layers:\n"
                               "    - {name: l0, params: 1M, fwd_flops_per_sample: 1T}\n"
                               "    - {name: l1, params: 100M, fwd_flops_per_sample: 100G}\n"
                               "training: {micro_batch: 1, seq_len: 1, steps: 4, warmup_steps: 1}\n"
                               "algorithms: [ddp]\n");
  const auto r = simulate(s, "dpu", {{"max_micro_batches", "0"}});
  Rounds out;
  for (const auto& a : r.trace.accumulations)
    if (a.worker == 0 && a.step >= 1)
      out.micro_batches.push_back(a.micro_batches);
  // Step 2's round runs beside step 3's micro-batches.
  for (const auto& e : r.trace.events) {
    if (e.worker != 0)
      continue;
    const auto& name = r.trace.name_of(e.name);
    if (e.step == 2 && name == "reduce-scatter grads")
      out.reduce_scatter_s = e.end - e.start;
    if (e.step == 3 && e.micro_batch == 1 && name.starts_with("fwd"))
      out.forward_s = e.end - e.start;
    if (e.step == 3 && e.micro_batch == 1 && name.starts_with("bwd"))
      out.backward_s = e.end - e.start;
  }
  return out;
}

TEST(AccoRoundInterference, TheRoundsTransfersShareDecidesTheMicroBatchesThatFit) {
  const testing::ScratchDir dir;
  const auto free = dpu_rounds(dir, 0.0);
  const auto slowed = dpu_rounds(dir, 0.2);
  // The transfer is not slowed: 101.01 ms either way.
  EXPECT_NEAR(free.reduce_scatter_s, 0.10101, 1e-6);
  EXPECT_NEAR(slowed.reduce_scatter_s, 0.10101, 1e-6);
  // A micro-batch wholly beside the reduce-scatter: 11 + 22 ms of work at 1 - 0.2 of the speed.
  EXPECT_NEAR(free.forward_s, 0.011, 1e-9);
  EXPECT_NEAR(free.backward_s, 0.022, 1e-9);
  EXPECT_NEAR(slowed.forward_s, 0.011 / 0.8, 1e-9);
  EXPECT_NEAR(slowed.backward_s, 0.022 / 0.8, 1e-9);
  // The round: a reduce-scatter and an all-gather back to back, 202.02 ms of transfers (the
  // counts' all-reduce, 20 us, and the step, priced at nothing, aside). The compute stream starts
  // a micro-batch until the round is done: ceil(202.02 / 33) = 7 free, ceil(202.02 / 41.25) = 5
  // at 0.2 (the slowed one's last micro-batch ends past the round, at full speed).
  ASSERT_FALSE(free.micro_batches.empty());
  for (int n : free.micro_batches)
    EXPECT_EQ(n, 7);
  ASSERT_FALSE(slowed.micro_batches.empty());
  for (int n : slowed.micro_batches)
    EXPECT_EQ(n, 5);
}

} // namespace
} // namespace overlapsim
