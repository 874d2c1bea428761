// FSDP (full and hybrid sharding) against hand calculations: iteration time and memory per GPU.
#include "algorithms/fsdp.h"
#include "test_util.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// A GPU of exactly 100 TFLOP/s and 1 TB/s HBM; nodes joined by 10 GB/s, 10 us.
std::string scenario(int nodes, int gpus_per_node, const std::string& layers) {
  return "name: fsdp\n" + testing::round_cluster(nodes, gpus_per_node) + "model:\n  layers:\n" +
         layers + "training: {micro_batch: 1, seq_len: 1, steps: 4, optimizer: adamw}\n" +
         "algorithms: [fsdp]\n";
}

double state_bytes(const Metrics& m) {
  return m.memory_breakdown[0] + m.memory_breakdown[1] + m.memory_breakdown[2] +
         m.memory_breakdown[3];
}

TEST(Fsdp, TwoUnitsTwoNodesIterationTimeByHand) {
  const auto s = scenario_from(
      scenario(2, 1, "    - {name: b, params: 50M, fwd_flops_per_sample: 1T, repeat: 2}\n"));
  // Per unit: forward 10 ms, backward 20 ms. All-gather and reduce-scatter of a 100 MB unit over
  // N = 2: (N - 1)(alpha + S / (N B)) = 10 us + 5 ms = 5.01 ms each.
  // Gathers F0 F1 B1 B0, two unsharded buffers (the k-th waits for the (k-2)-th to be released):
  //   AG F0 0-5.01, AG F1 5.01-10.02; fwd0 5.01-15.01 frees F0: AG B1 15.01-20.02;
  //   fwd1 15.01-25.01 frees F1: AG B0 25.01-30.02; bwd1 25.01-45.01, RS1 45.01-50.02;
  //   bwd0 45.01-65.01, RS0 65.01-70.02; AdamW on the 50M-parameter shard
  //   (50M x 28 B / 1 TB/s = 1.4 ms) 70.02-71.42; the next step's AG F0 starts then.
  const double expected = 0.07142;
  const auto r = simulate(s, "fsdp");
  EXPECT_NEAR(r.metrics.iteration_time_s, expected, 0.002 * expected);
  // Sent per GPU and step: 4 all-gathers and 2 reduce-scatters, each (N - 1) / N x 100 MB.
  EXPECT_NEAR(r.metrics.comm_bytes_per_step, 6 * 50e6, 1e3);
  // Exposed: the first all-gather and the last reduce-scatter (compute 60 ms + optimizer 1.4 ms).
  EXPECT_NEAR(r.metrics.idle_fraction_mean, (expected - 0.0614) / expected, 0.002);

  // Without resharding the backward needs no all-gathers: fwd0 5.01-15.01, fwd1 15.01-25.01,
  // bwd1 25.01-45.01, bwd0 45.01-65.01, RS0 65.01-70.02, AdamW to 71.42: the same time here
  // (the backward gathers were hidden), with 2 gathers fewer on the wire.
  const auto keep = simulate(s, "fsdp", {{"reshard_after_forward", "false"}});
  EXPECT_NEAR(keep.metrics.iteration_time_s, expected, 0.002 * expected);
  EXPECT_NEAR(keep.metrics.comm_bytes_per_step, 4 * 50e6, 1e3);

  // One unit of both layers: AG 0-10.01, fwd 20 ms to 30.01, AG again (10.01, hidden: it was
  // issued at 10.01 and done by 20.02), bwd 30.01-70.01, RS 10.01 to 80.02, AdamW to 81.42.
  const auto one = simulate(s, "fsdp", {{"wrap", "200MB"}});
  EXPECT_NEAR(one.metrics.iteration_time_s, 0.08142, 0.002 * 0.08142);
}

TEST(Fsdp, ReducingEveryMicroBatchByHand) {
  // One 200 MB unit (two 50M-parameter layers, bf16), 2 nodes x 1 GPU, 2 micro-batches a step.
  // Per micro-batch: forward 20 ms, backward 40 ms. All-gather or bf16 reduce-scatter of the unit:
  // (N - 1)(alpha + S / (N B)) = 10 us + 10 ms = 10.01 ms.
  std::string text =
      scenario(2, 1, "    - {name: b, params: 50M, fwd_flops_per_sample: 1T, repeat: 2}\n");
  text.replace(text.find("steps: 4"), 8, "steps: 4, grad_accum: 2");
  const auto s = scenario_from(text);
  // Reduced once a step: AG 0-10.01, fwd 10.01-30.01, bwd 30.01-70.01 (its gather hidden),
  // fwd 70.01-90.01, bwd 90.01-130.01 (the second micro-batch's gathers hidden), RS
  // 130.01-140.02, AdamW on the 50M shard 1.4 ms: 141.42 ms.
  const auto once = simulate(s, "fsdp", {{"wrap", "200MB"}});
  EXPECT_NEAR(once.metrics.iteration_time_s, 0.14142, 0.002 * 0.14142);
  // Outside no_sync() the first backward's reduce-scatter (70.01-80.02) ends it; the comm stream
  // then gathers for the second backward (80.02-90.03): fwd 80.02-100.02, bwd 100.02-140.02,
  // RS 140.02-150.03, AdamW to 151.43 ms.
  const auto every = simulate(s, "fsdp", {{"wrap", "200MB"}, {"sync_every_micro_batch", "true"}});
  EXPECT_NEAR(every.metrics.iteration_time_s, 0.15143, 0.002 * 0.15143);
  // Sent per step: 4 all-gathers and now 2 reduce-scatters of (N - 1) / N x 200 MB.
  EXPECT_NEAR(once.metrics.comm_bytes_per_step, 5 * 100e6, 1e3);
  EXPECT_NEAR(every.metrics.comm_bytes_per_step, 6 * 100e6, 1e3);
  // reduce_dtype fp32 doubles the reduce-scatters' bytes (20.01 ms each): RS 70.01-90.02, AG
  // 90.02-100.03, fwd 90.02-110.02, bwd 110.02-150.02, RS 150.02-170.03, AdamW to 171.43 ms.
  const auto fp32 = simulate(
      s, "fsdp", {{"wrap", "200MB"}, {"sync_every_micro_batch", "true"}, {"reduce_dtype", "fp32"}});
  EXPECT_NEAR(fp32.metrics.iteration_time_s, 0.17143, 0.002 * 0.17143);
  EXPECT_NEAR(fp32.metrics.comm_bytes_per_step, 4 * 100e6 + 2 * 200e6, 1e3);
}

TEST(Fsdp, MemoryPerGpuByHand) {
  // 8 blocks of 100M parameters (bf16, AdamW: K = 12) and a 200M-parameter head: 1B in all.
  const std::string layers = "    - {name: b, params: 100M, fwd_flops_per_sample: 1G, repeat: 8}\n"
                             "    - {name: head, params: 200M, fwd_flops_per_sample: 1G}\n";
  // Full sharding over 2 x 4 = 8 GPUs: (2 + 2 + 12) x 1e9 / 8 = 2 GB, plus the working set of the
  // largest unit (the head): two parameter buffers and one gradient, (2 x 2 + 2) x 200M = 1.2 GB.
  const auto full = simulate(scenario_from(scenario(2, 4, layers)), "fsdp");
  EXPECT_NEAR(state_bytes(full.metrics), 3.2e9, 1e6);
  EXPECT_NEAR(full.metrics.memory_breakdown[2], 12 * 1e9 / 8, 1e6);
  EXPECT_NEAR(full.metrics.memory_breakdown[0], 2 * 1e9 / 8 + 2 * 2 * 200e6, 1e6);
  // Hybrid: sharded over the 4 GPUs of a node: 16 x 1e9 / 4 = 4 GB, plus the same 1.2 GB.
  const auto hybrid =
      simulate(scenario_from(scenario(2, 4, layers)), "fsdp", {{"sharding", "hybrid"}});
  EXPECT_NEAR(state_bytes(hybrid.metrics), 5.2e9, 1e6);
  // Wrapping two blocks per unit: the largest unit is still the head (200M).
  const auto two = simulate(scenario_from(scenario(2, 4, layers)), "fsdp", {{"wrap", "2"}});
  EXPECT_NEAR(state_bytes(two.metrics), 3.2e9, 1e6);
  // Without resharding all parameters stay unsharded besides the shard: 2 x 1e9 + 2 GB + the
  // unsharded gradient of the head.
  const auto keep =
      simulate(scenario_from(scenario(2, 4, layers)), "fsdp", {{"reshard_after_forward", "false"}});
  EXPECT_NEAR(state_bytes(keep.metrics), 2e9 + 2e9 + 2 * 200e6, 1e6);
  // reduce_dtype fp32: the gradients are 4 bytes, sharded and unsharded: (2 + 4 + 12) x 1e9 / 8
  // + (2 x 2 + 4) x 200M = 2.25 + 1.6 GB.
  const auto fp32 =
      simulate(scenario_from(scenario(2, 4, layers)), "fsdp", {{"reduce_dtype", "fp32"}});
  EXPECT_NEAR(state_bytes(fp32.metrics), 3.85e9, 1e6);
}

TEST(Fsdp, HybridAllReducesShardsAcrossNodes) {
  const auto s = scenario_from(
      scenario(2, 2, "    - {name: b, params: 50M, fwd_flops_per_sample: 1T, repeat: 2}\n"));
  // Inside a node (100 GB/s): each unit's all-gather/reduce-scatter sends 1/2 x 100 MB; across
  // nodes each GPU all-reduces its 25M-parameter (50 MB) shard of each unit with its replica:
  // 2 (N - 1) / N x 50 MB = 50 MB. Per step: 4 x 50 + 2 x 50 + 2 x 50 MB = 400 MB.
  const auto r = simulate(s, "fsdp", {{"sharding", "hybrid"}});
  EXPECT_NEAR(r.metrics.comm_bytes_per_step, 400e6, 1e3);
  // Gathers take 1 us + 50 MB / 100 GB/s = 0.501 ms; compute 60 ms; the last unit's reduce-scatter
  // (0.501 ms) and the all-reduce of its shard are exposed (the first unit's ran during bwd0). Both
  // GPUs of a node all-reduce at once through the node's one NIC, 5 GB/s each:
  // 2 x (10 us + 25 MB / 5 GB/s) = 10.02 ms. AdamW on the 50M-parameter shard: 1.4 ms.
  const double expected = 0.000501 + 0.060 + 0.000501 + 0.01002 + 0.0014;
  EXPECT_NEAR(r.metrics.iteration_time_s, expected, 0.003 * expected);
}

TEST(Fsdp, WrapUnitsByLayersOrBytes) {
  ParamLayout layout;
  layout.offset = {0, 10, 20, 50, 60};
  auto ranges = [](const std::vector<LayerRange>& u) {
    std::vector<std::pair<int, int>> r;
    for (auto x : u)
      r.emplace_back(x.first, x.last);
    return r;
  };
  using V = std::vector<std::pair<int, int>>;
  EXPECT_EQ(ranges(wrap_units(layout, 1, 0, 2)), (V{{0, 1}, {1, 2}, {2, 3}, {3, 4}}));
  EXPECT_EQ(ranges(wrap_units(layout, 3, 0, 2)), (V{{0, 3}, {3, 4}}));
  // 40 bytes = 20 elements of 2 bytes: [0, 2) holds 20, [2, 3) holds 30, [3, 4) the rest.
  EXPECT_EQ(ranges(wrap_units(layout, 1, 40, 2)), (V{{0, 2}, {2, 3}, {3, 4}}));
}

TEST(Fsdp, BadOptionsNameTheKey) {
  const auto s = scenario_from(
      scenario(2, 1, "    - {name: b, params: 1M, fwd_flops_per_sample: 1G, repeat: 2}\n"));
  for (auto [key, value] :
       {std::pair{"sharding", "zero"}, std::pair{"wrap", "0"},
        std::pair{"reshard_after_forward", "maybe"}, std::pair{"sync_every_micro_batch", "1"},
        std::pair{"reduce_dtype", "fp8"}}) {
    try {
      simulate(s, "fsdp", {{key, value}});
      ADD_FAILURE() << key;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("algorithms.fsdp.") + key),
                std::string::npos)
          << e.what();
    }
  }
}

} // namespace
} // namespace overlapsim
