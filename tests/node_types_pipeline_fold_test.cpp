// Mixed GPU types under the statistical fold of pipeline replicas (issue 64, item 5;
// sim/type_classes.h's add_pattern_extremes, sim/statistical_fold.h): one extreme replica per
// type pattern (the types of a replica's nodes, in order), each running op by op as the slowest of
// its own pattern's replicas left out and itself.
#include "sim/rank_classes.h"
#include "sim/statistical_fold.h"
#include "test_util.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

// 16 nodes x 2 A100 80 GB, TP2 x PP2 x DP8 (Megatron's tp-dp-pp: node n < 8 holds stage 0 of
// replica n, node n + 8 its stage 1; node groups {n, n + 8}), GPT-Neo 125M, 1F1B of 4
// micro-batches, 3 steps. Replicas 5, 6 and 7 have their stage 1 on the 40 GB A100 (nodes 13-15):
// two type patterns, 80/80 (replicas 0-4) and 80/40 (replicas 5-7).
std::string typed_yaml(const std::string& cluster, const std::string& training = "") {
  return "name: typed-statistical-pipeline\n"
         "cluster: {nodes: 16, gpus_per_node: 2, gpu: a100-80gb, intra_node: nvlink3, "
         "inter_node: omnipath-100, node_types: [{nodes: [13, 14, 15], gpu: a100-40gb}]" +
         cluster +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 1, seq_len: 256, grad_accum: 4, warmup_steps: 1, steps: 3, "
         "optimizer: adamw" +
         training +
         "}\n"
         "parallelism: {tensor: 2, pipeline: 2}\n"
         "algorithms: [ddp]\n";
}

const std::string kJitter = ", jitter: {distribution: lognormal, sigma: 0.05}";

sim::RankClasses classes_of(const scenario::Scenario& s) {
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  return sim::choose_rank_classes(s, *make_algorithm(a));
}

// Every summary field of `folded` the full simulation's to 1e-9 (relative), idle GPU by GPU.
void expect_same_summary(const testing::Simulated& folded, const testing::Simulated& full) {
  const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-9 * std::abs(y); };
  EXPECT_PRED2(close, folded.metrics.iteration_time_s, full.metrics.iteration_time_s);
  EXPECT_PRED2(close, folded.metrics.compute_s_per_step, full.metrics.compute_s_per_step);
  EXPECT_PRED2(close, folded.metrics.comm_s_per_step, full.metrics.comm_s_per_step);
  EXPECT_PRED2(close, folded.metrics.waiting_s, full.metrics.waiting_s);
  EXPECT_PRED2(close, folded.metrics.exposed_comm_s, full.metrics.exposed_comm_s);
  EXPECT_PRED2(close, folded.metrics.peak_memory_bytes, full.metrics.peak_memory_bytes);
  ASSERT_EQ(folded.metrics.idle_fraction.size(), full.metrics.idle_fraction.size());
  for (std::size_t g = 0; g < full.metrics.idle_fraction.size(); ++g)
    EXPECT_NEAR(folded.metrics.idle_fraction[g], full.metrics.idle_fraction[g], 1e-9) << g;
}

// Node groups {n, n + 8}: NCCL's trees over the 8 groups make group 1 the representative (its
// pattern 80/80); the last other 80/80 group (4) runs too, its replica as the slowest of the
// 80/80 replicas left out (0, 2, 3) and itself; group 5 (NCCL's busiest of 5-7) runs for the
// 80/40 pattern, its last other group (7) as the slowest of replica 6 and itself. 16 of 32 GPUs.
TEST(TypedStatisticalPipelineFold, OneExtremeReplicaPerTypePattern) {
  const auto s = testing::scenario_from(typed_yaml(kJitter + ", rank_classes: statistical"));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.folded) << rc.why_full;
  ASSERT_TRUE(rc.statistical());
  EXPECT_EQ(rc.node, 1);
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{1, 4, 5, 7, 9, 12, 13, 15}));
  EXPECT_EQ(rc.replicas, (std::vector<std::vector<int>>{{0, 2, 3, 4}, {6, 7}}));
  EXPECT_EQ(rc.extreme, 8);                     // replica 4's first GPU
  EXPECT_EQ(rc.representative(2 * 14), 2 * 13); // replica 6's stage 1: the 80/40 representative's
  EXPECT_EQ(rc.representative(2 * 10), 2 * 9);  // replica 2's stage 1: the 80/80 one's
  EXPECT_EQ(rc.describe(),
            "classes (16 of 32 GPUs simulated; statistical approximation: per pattern of GPU "
            "types along a replica, one replica runs op by op as the slowest of its pattern's "
            "replicas left out and itself (replica 4 (GPU 8 on) for 4 replicas of "
            "a100-80gb/a100-80gb, replica 7 (GPU 14 on) for 2 replicas of a100-80gb/a100-40gb; "
            "jitter); rank_classes: auto simulates every GPU)");
  sim::StatisticalFold fold(s, rc, 1e12);
  EXPECT_TRUE(fold.per_replica());
  // Replica 4's GPUs (TP ranks 0, 1 of stages 0, 1) stand for 4 replicas, replica 7's for 2.
  for (const int extreme : {8, 9, 24, 25}) {
    ASSERT_NE(fold.of(extreme), nullptr) << extreme;
    EXPECT_EQ(fold.of(extreme)->size(), 4) << extreme;
  }
  for (const int extreme : {14, 15, 30, 31}) {
    ASSERT_NE(fold.of(extreme), nullptr) << extreme;
    EXPECT_EQ(fold.of(extreme)->size(), 2) << extreme;
  }
  for (const int itself : {2, 3, 10, 18, 26})
    EXPECT_EQ(fold.of(itself), nullptr) << itself;
}

// Against the full simulation (0.3 s each way): the iteration time within 1% (measured: equal to
// 1e-15, 47.79 ms; 47.25 ms without jitter, so the draws move it by 1.1%), bit-identical on a
// rerun.
TEST(TypedStatisticalPipelineFold, NearTheFullSimulation) {
  const auto s = testing::scenario_from(typed_yaml(kJitter + ", rank_classes: statistical"));
  const auto folded = testing::simulate(s, "ddp");
  const auto again = testing::simulate(s, "ddp");
  const auto full =
      testing::simulate(testing::scenario_from(typed_yaml(kJitter + ", rank_classes: off")), "ddp");
  EXPECT_EQ(folded.trace.workers, 16);
  EXPECT_EQ(folded.metrics.iteration_time_s, again.metrics.iteration_time_s);
  EXPECT_NEAR(folded.metrics.iteration_time_s / full.metrics.iteration_time_s, 1.0, 0.01);
  EXPECT_NEAR(full.metrics.iteration_time_s, 0.04779, 1e-5);
}

// Without jitter, each GPU drawing the one length of `lengths: [256]`: the statistical fold
// still runs its two extreme replicas (the draws are sequence lengths), but every replica's
// clocks are the extreme's own, so the fold is exact: every summary field the full
// simulation's. With nothing drawn at all, `statistical` is the exact fold (one group per
// pattern, 8 of 32 GPUs), unlabelled and exact too.
TEST(TypedStatisticalPipelineFold, ExactWhereNothingVaries) {
  const std::string lengths = ", seq_len_distribution: {lengths: [256]}";
  const auto s = testing::scenario_from(typed_yaml(", rank_classes: statistical", lengths));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.statistical()) << rc.describe();
  EXPECT_EQ(rc.replicas.size(), 2u);
  const auto folded = testing::simulate(s, "ddp");
  const auto full =
      testing::simulate(testing::scenario_from(typed_yaml(", rank_classes: off", lengths)), "ddp");
  EXPECT_EQ(folded.trace.workers, 16);
  expect_same_summary(folded, full);

  const auto plain = testing::scenario_from(typed_yaml(", rank_classes: statistical"));
  EXPECT_EQ(classes_of(plain).describe(), "classes (8 of 32 GPUs simulated)");
  const auto exact = testing::simulate(plain, "ddp");
  const auto exact_full =
      testing::simulate(testing::scenario_from(typed_yaml(", rank_classes: off")), "ddp");
  EXPECT_EQ(exact.trace.workers, 8);
  expect_same_summary(exact, exact_full);
}

} // namespace
} // namespace overlapsim
