// Statistical rank classes for pipelines and TP x PP (issue 64.5; sim/rank_classes.h,
// sim/statistical_fold.h): a whole pipeline replica runs as the slowest of the replicas left out,
// each of its GPUs as the slowest of their GPUs at the same (tensor rank, stage).
#include "sim/rank_classes.h"
#include "sim/statistical_fold.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// 8 nodes x 4 A100, TP2 x PP2 x DP8 (Megatron's tp-dp-pp order: node n holds stage 0 of
// replicas 2n and 2n + 1 for n < 4, node n + 4 their stage 1), GPT-Neo 125M, 1F1B of 4
// micro-batches.
std::string pipeline_yaml(const std::string& cluster) {
  return "name: statistical-pipeline\n"
         "cluster: {nodes: 8, gpus_per_node: 4, gpu: a100-80gb, intra_node: nvlink3, "
         "inter_node: omnipath-100" +
         cluster +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 1, seq_len: 256, grad_accum: 4, warmup_steps: 1, steps: 3, "
         "optimizer: adamw}\n"
         "parallelism: {tensor: 2, pipeline: 2}\n"
         "algorithms: [ddp]\n";
}

const std::string kJitter =
    ", jitter: {distribution: lognormal, sigma: 0.05}, rank_classes: statistical";

sim::RankClasses classes_of(const std::string& cluster) {
  const auto s = testing::scenario_from(pipeline_yaml(cluster));
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  return sim::choose_rank_classes(s, *make_algorithm(a));
}

// Node groups {n, n + 4}: NCCL's trees over the 4 groups make group 1 the representative (nodes
// 1, 5: replicas 2, 3); the last other group runs too (nodes 3, 7), its first replica (6: GPUs
// 12, 13 at stage 0, 28, 29 at stage 1) as the slowest of replicas 0, 1, 4, 5 (groups 0 and 2,
// left out) and itself. Replica 7 (GPUs 14, 15, 30, 31) runs as itself.
TEST(StatisticalPipelineFold, AReplicaStandsForTheReplicasLeftOut) {
  const auto rc = classes_of(kJitter);
  ASSERT_TRUE(rc.folded);
  EXPECT_EQ(rc.node, 1);
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(rc.extreme, 12);
  EXPECT_EQ(rc.replicas, (std::vector<std::vector<int>>{{0, 1, 4, 5, 6}}));
  EXPECT_THAT(rc.describe(),
              HasSubstr("classes (16 of 32 GPUs simulated; statistical approximation: replica 6 "
                        "(GPU 12 on) runs op by op as the slowest of the 4 replicas left out and "
                        "itself (jitter)"));
  const auto s = testing::scenario_from(pipeline_yaml(kJitter));
  sim::StatisticalFold fold(s, rc, 1e12);
  EXPECT_TRUE(fold.per_replica());
  for (const int extreme : {12, 13, 28, 29}) {
    ASSERT_NE(fold.of(extreme), nullptr) << extreme;
    EXPECT_EQ(fold.of(extreme)->size(), 5);
  }
  for (const int itself : {4, 14, 15, 20, 30, 31})
    EXPECT_EQ(fold.of(itself), nullptr) << itself;
  // Nothing drawn: the exact fold (one group of 8 GPUs), unlabelled.
  const auto exact = classes_of(", rank_classes: statistical");
  EXPECT_FALSE(exact.statistical());
  EXPECT_TRUE(exact.replicas.empty());
  EXPECT_EQ(exact.describe(), "classes (8 of 32 GPUs simulated)");
}

// Each replica's TP ranks wait for each other, not for the slowest of all; a stage's message
// reaches each replica's next stage when that replica's own sender sent it. By hand, two replicas
// (clocks [replica 0, replica 1]) of a TP2 x PP2 extreme: after their ops the stage-0 TP ranks
// stand at [1.0, 2.0] and [3.0, 1.5]; the extreme's group all arrived at 3.0, and the collective
// ends at 3.25: each replica's TP ranks restart at the later of its own two plus 0.25, [3.25,
// 2.25]. Stage 0 sends at 3.25; stage 1 (clocks [0.5, 0.5]) posted its receive at 1.0 and got it
// at 3.5 (transfer 0.25): [3.5, 2.5].
TEST(StatisticalPipelineFold, ReplicasWaitForTheirOwnMembersByHand) {
  const auto rc = classes_of(kJitter);
  const auto s = testing::scenario_from(pipeline_yaml(kJitter));
  sim::StatisticalFold fold(s, rc, 1e12);
  // Only two replicas' clocks looked at: the first two of five.
  auto& a = fold.of(12)->clocks(0);
  auto& b = fold.of(13)->clocks(0);
  a[0] = 1.0, a[1] = 2.0, b[0] = 3.0, b[1] = 1.5;
  fold.of(12)->explained(0, 2.0);
  fold.of(13)->explained(0, 3.0);
  fold.tensor_synced(12, 0, 0, 3.25);
  fold.tensor_synced(13, 0, 0, 3.25); // the second member back: already done
  EXPECT_DOUBLE_EQ(a[0], 3.25);
  EXPECT_DOUBLE_EQ(a[1], 2.25);
  EXPECT_DOUBLE_EQ(b[0], 3.25);
  EXPECT_DOUBLE_EQ(b[1], 2.25);
  fold.sent(12, 28, 1, 0, 3.25);
  auto& c = fold.of(28)->clocks(0);
  c[0] = 0.5, c[1] = 0.5;
  fold.of(28)->explained(0, 1.0);
  fold.received(12, 28, 1, 0, 1.0, 3.5);
  EXPECT_DOUBLE_EQ(c[0], 3.5);
  EXPECT_DOUBLE_EQ(c[1], 2.5);
  EXPECT_DOUBLE_EQ(fold.of(28)->ended(0), 3.5);
}

// 32 GPUs, 16 simulated, against the full simulation: iteration time within 1% (measured below),
// and bit-identical on a rerun.
TEST(StatisticalPipelineFold, NearTheFullSimulation) {
  const auto folded_s = testing::scenario_from(pipeline_yaml(kJitter));
  const auto folded = testing::simulate(folded_s, "ddp");
  const auto again = testing::simulate(folded_s, "ddp");
  const auto full =
      testing::simulate(testing::scenario_from(pipeline_yaml(
                            ", jitter: {distribution: lognormal, sigma: 0.05}, rank_classes: off")),
                        "ddp");
  EXPECT_EQ(folded.trace.workers, 16);
  EXPECT_EQ(folded.metrics.iteration_time_s, again.metrics.iteration_time_s);
  EXPECT_NEAR(folded.metrics.iteration_time_s / full.metrics.iteration_time_s, 1.0, 0.01);
}

} // namespace
} // namespace overlapsim
