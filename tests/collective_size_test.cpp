// A collective's size as `profile` measures it (runtime/collective_size.h), and the sizes a
// simulated run lists for the profile to measure.
#include "runtime/collective_size.h"
#include "runtime/topology.h"
#include "scenario/loader.h"
#include "sim/sim_runtime.h"

#include <algorithm>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

TEST(CollectiveSize, CountsTheArrayAsNcclTestsDo) {
  const Group four(0, {0, 1, 2, 3});
  CollectiveCall call;
  call.group = &four;
  call.op = CollectiveOp::all_gather; // the data is the shard; the array is 4 of them
  EXPECT_EQ(profiled_size(call, 1000), (CollectiveSize{"all_gather", 4, 4000}));
  call.op = CollectiveOp::reduce_scatter; // the data is the array
  EXPECT_EQ(profiled_size(call, 1000), (CollectiveSize{"reduce_scatter", 4, 1000}));
  call.op = CollectiveOp::all_reduce;
  EXPECT_EQ(profiled_size(call, 1000), (CollectiveSize{"all_reduce", 4, 1000}));
  call.op = CollectiveOp::send; // a message between two ranks, whatever the group
  EXPECT_EQ(profiled_size(call, 1000), (CollectiveSize{"send_recv", 2, 1000}));
  call.op = CollectiveOp::recv; // its send counts it
  EXPECT_FALSE(profiled_size(call, 1000));
  call.op = CollectiveOp::barrier;
  EXPECT_FALSE(profiled_size(call, 0));
  EXPECT_EQ(calibration_op_name(CollectiveOp::all_to_all), "all_to_all");
}

// In place: no output, or one overlapping the data in the same buffer (ZeRO-1's shards).
TEST(CollectiveSize, InPlaceIsAnOutputOverTheInput) {
  CollectiveCall call;
  call.data = Slice{3, 100, 400};
  EXPECT_TRUE(in_place(call));   // DDP's bucket all-reduce: no output slice
  call.out = Slice{3, 200, 100}; // a reduce-scatter into the shard inside its input
  EXPECT_TRUE(in_place(call));
  call.out = Slice{3, 0, 1000}; // an all-gather of the shard into the whole
  EXPECT_TRUE(in_place(call));
  call.out = Slice{3, 500, 100}; // the same buffer, past the data
  EXPECT_FALSE(in_place(call));
  call.out = Slice{4, 100, 400}; // another buffer (FSDP's gradient shards)
  EXPECT_FALSE(in_place(call));
}

TEST(CollectiveSize, SimulationListsTheSizesItsCollectivesUsed) {
  // 4 layers of 256 x 256 + 256 parameters, fp32 gradients: 263168 x 4 bytes, one DDP bucket
  // (25 MiB cap), all-reduced once per step (the last micro-batch of 2). Calls count over the GPUs
  // the simulation ran: both (rank classes fold from 4 GPUs left out).
  const auto s = scenario::load_scenario_text(R"(name: sizes
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, inter_node: ethernet-10g}
model: {preset: mlp, width: 256, depth: 4, dtype: fp32}
training: {micro_batch: 64, seq_len: 1, grad_accum: 2, steps: 3, warmup_steps: 1}
algorithms: [ddp, fsdp, acco]
)",
                                              "sizes.yaml");
  const auto ddp = sim::simulate(s, s.algorithms[0]).collective_calls;
  ASSERT_EQ(ddp.size(), 2u);
  EXPECT_EQ(ddp.at(CollectiveSize{"all_reduce", 2, 263168.0 * 4}), 2 * 4); // 2 ranks, 4 steps
  // Its optimizer steps too, by the parameters each updates: the whole model once a step.
  EXPECT_EQ(ddp.at(CollectiveSize{kOptimizerStep, 1, 263168.0}), 2 * 4);
  // FSDP: each layer a unit, gathered for the forward and the backward of each micro-batch, its
  // gradient reduced once a step.
  const auto fsdp = sim::simulate(s, s.algorithms[1]).collective_calls;
  const CollectiveSize unit_gather{"all_gather", 2, 65792.0 * 4};
  const CollectiveSize unit_reduce{"reduce_scatter", 2, 65792.0 * 4};
  ASSERT_TRUE(fsdp.contains(unit_gather));
  ASSERT_TRUE(fsdp.contains(unit_reduce));
  EXPECT_EQ(fsdp.at(unit_gather),
            2 * 4 * 2 * 2 * 4); // ranks x steps x micro-batches x passes x units
  EXPECT_EQ(fsdp.at(unit_reduce), 2 * 4 * 4);
  // Each unit's shard stepped once a step: half of 65,792 parameters.
  EXPECT_EQ(fsdp.at(CollectiveSize{kOptimizerStep, 1, 65792.0 / 2}), 2 * 4 * 4);
  // Neither makes an estimate; ACCO does, of its shard (half of 263,168), under its own name.
  EXPECT_FALSE(std::any_of(fsdp.begin(), fsdp.end(),
                           [](const auto& c) { return c.first.op == kOptimizerEstimate; }));
  const auto acco = sim::simulate(s, s.algorithms[2]).collective_calls;
  EXPECT_TRUE(acco.contains(CollectiveSize{kOptimizerEstimate, 1, 263168.0 / 2}));
}

} // namespace
} // namespace overlapsim
