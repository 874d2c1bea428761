// Statistical rank classes (issue 64.2; sim/rank_classes.h, sim/slowest_of.h): GPUs told apart only
// by their draws fold, one GPU running as the slowest of those left out.
#include "sim/gpu_draws.h"
#include "sim/rank_classes.h"
#include "sim/slowest_of.h"
#include "test_util.h"

#include <algorithm>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <numeric>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// 8 nodes x 4 A100 (NVLink inside, Omni-Path between), GPT-Neo 125M at a short sequence.
std::string cluster_yaml(const std::string& extra, const std::string& training = "") {
  return "name: statistical\n"
         "cluster: {nodes: 8, gpus_per_node: 4, gpu: a100-80gb, intra_node: nvlink3, "
         "inter_node: omnipath-100" +
         extra +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 2, seq_len: 256, grad_accum: 2, warmup_steps: 1, steps: 3, "
         "optimizer: adamw" +
         training +
         "}\n"
         "algorithms: [ddp]\n";
}

sim::RankClasses classes_of(const std::string& extra) {
  const auto s = testing::scenario_from(cluster_yaml(extra));
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  return sim::choose_rank_classes(s, *make_algorithm(a));
}

const std::string kJitter = ", jitter: {distribution: lognormal, sigma: 0.05}";

// The largest of n lognormals: F^n, so its median is exp(mu + sigma * Phi^-1(0.5^(1/n))). By hand
// (Phi^-1 from Python's statistics.NormalDist): 0.5^(1/1024) = 0.99932333,
// Phi^-1(0.99932333) = 3.204421, exp(-0.05^2/2 + 0.05 * 3.204421) = 1.172304; n = 64: 2.298313,
// exp(-0.1^2/2 + 0.1 * 2.298313) = 1.252111; n = 1: the lognormal's own median exp(mu).
TEST(StatisticalFold, MaxOfLognormalsQuantileByHand) {
  EXPECT_NEAR(sim::max_of_lognormals_quantile(-0.05 * 0.05 / 2, 0.05, 1024, 0.5), 1.172304, 1e-6);
  EXPECT_NEAR(sim::max_of_lognormals_quantile(-0.1 * 0.1 / 2, 0.1, 64, 0.5), 1.252111, 1e-6);
  EXPECT_NEAR(sim::max_of_lognormals_quantile(-0.005, 0.1, 1, 0.5), std::exp(-0.005), 1e-12);
}

// One op on 64 GPUs with lognormal sigma 0.1: the slowest GPU's time, over 2,001 seeds, has the
// median above (1.252111 s for a 1 s op) within the sampling error of a median of 2,001 (~0.3%).
TEST(StatisticalFold, OneOpTakesTheSlowestOfItsGpus) {
  auto s = testing::scenario_from(cluster_yaml(", jitter: {distribution: lognormal, sigma: 0.1}"));
  std::vector<int> ranks(64);
  std::iota(ranks.begin(), ranks.end(), 0);
  std::vector<double> slowest;
  for (std::uint64_t seed = 1; seed <= 2001; ++seed) {
    s.seed = seed;
    sim::SlowestOf of(s, ranks, 1e12);
    slowest.push_back(of.op_seconds(0, 0.0, 1e12, MicroBatch{0, 0}, {}));
  }
  std::nth_element(slowest.begin(), slowest.begin() + 1000, slowest.end());
  EXPECT_NEAR(slowest[1000], 1.252111, 0.005);
}

// Between two waits the slowest GPU is the one whose *sum* is largest: two ops take
// max_g(d1_g + d2_g), the draws being each GPU's own generator's (the full simulation's), not
// max d1 + max d2. After a wait every GPU starts again from the same moment.
TEST(StatisticalFold, TheSlowestIsOfSumsBetweenWaits) {
  const auto s =
      testing::scenario_from(cluster_yaml(", jitter: {distribution: lognormal, sigma: "
                                          "0.2}, stragglers: [{gpu: 9, slowdown: 1.1}]"));
  const std::vector<int> ranks{3, 9, 17, 30};
  sim::SlowestOf of(s, ranks, 1e12);
  std::vector<double> d1, d2, d3;
  for (const int r : ranks) {
    auto rng = sim::jitter_generator(s.seed, r);
    const double slow = r == 9 ? 1.1 : 1.0;
    d1.push_back(sim::draw_jitter(s.cluster.jitter, 1.0, rng) * slow);
    d2.push_back(sim::draw_jitter(s.cluster.jitter, 1.0, rng) * slow);
    d3.push_back(sim::draw_jitter(s.cluster.jitter, 1.0, rng) * slow);
  }
  const double first = of.op_seconds(0, 0.0, 1e12, MicroBatch{0, 0}, {});
  EXPECT_DOUBLE_EQ(first, *std::max_element(d1.begin(), d1.end()));
  const double second = of.op_seconds(0, first, 1e12, MicroBatch{0, 0}, {});
  double of_sums = 0;
  for (std::size_t g = 0; g < ranks.size(); ++g)
    of_sums = std::max(of_sums, d1[g] + d2[g]);
  EXPECT_NEAR(first + second, of_sums, 1e-12);
  // Never more than the per-op maxima's sum (equal only where one GPU drew both maxima).
  EXPECT_LE(first + second, first + *std::max_element(d2.begin(), d2.end()) + 1e-12);
  // Waited until t = 10 s: all start there.
  EXPECT_NEAR(of.op_seconds(0, 10.0, 1e12, MicroBatch{0, 0}, {}),
              *std::max_element(d3.begin(), d3.end()), 1e-12);
}

TEST(StatisticalFold, OnlyWhenAskedAndLabelled) {
  // `auto` says what the statistical fold would simulate (issue 64, item 3 of the brief).
  EXPECT_EQ(classes_of(kJitter).why_full,
            "jitter on every GPU; cluster.rank_classes: statistical would simulate 8 of 32 GPUs, "
            "an approximation");
  EXPECT_EQ(classes_of(kJitter + ", rank_classes: off").why_full, "cluster.rank_classes: off");
  const auto rc = classes_of(kJitter + ", rank_classes: statistical");
  ASSERT_TRUE(rc.folded);
  // NCCL's trees over 8 nodes make node 1 the busiest (the representative); node 7 the slowest.
  EXPECT_EQ(rc.node, 1);
  EXPECT_EQ(rc.extreme, 28);
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{1, 7}));
  EXPECT_EQ(rc.slowest_of().size(), 32u - 8u + 1u);
  EXPECT_THAT(rc.describe(), HasSubstr("classes (8 of 32 GPUs simulated; statistical "
                                       "approximation: GPU 28 runs as the slowest of the 25 GPUs "
                                       "left out and itself (jitter)"));
  // Nothing drawn: the exact fold, no label.
  const auto exact = classes_of(", rank_classes: statistical");
  EXPECT_TRUE(exact.folded);
  EXPECT_FALSE(exact.statistical());
  EXPECT_EQ(exact.describe(), "classes (4 of 32 GPUs simulated)");
  // A straggler on every node folds statistically too.
  std::string every = ", rank_classes: statistical, stragglers: [";
  for (int n = 0; n < 8; ++n)
    every += fmt::format("{}{{gpu: {}, slowdown: {}}}", n ? ", " : "", 4 * n + n % 4, 1 + 0.01 * n);
  EXPECT_THAT(classes_of(every + "]").approximation, HasSubstr("(stragglers)"));
}

// 32 GPUs, folded onto 8, against the full simulation: iteration time within 1% (measured
// 0 for ddp, fsdp, diloco, stragglers and lengths, 2.5e-4 for acco: the GPUs left out draw what
// they draw in full), and the same numbers on a rerun.
struct Case {
  const char* name;
  const char* algorithm;
  std::map<std::string, std::string> options;
  const char* extra;
  const char* training = "";
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class StatisticalFoldedNearFull : public ::testing::TestWithParam<Case> {};

TEST_P(StatisticalFoldedNearFull, IterationTime) {
  const auto& c = GetParam();
  const auto folded_s = testing::scenario_from(
      cluster_yaml(std::string(c.extra) + ", rank_classes: statistical", c.training));
  const auto folded = testing::simulate(folded_s, c.algorithm, c.options);
  const auto again = testing::simulate(folded_s, c.algorithm, c.options);
  const auto full =
      testing::simulate(testing::scenario_from(
                            cluster_yaml(std::string(c.extra) + ", rank_classes: off", c.training)),
                        c.algorithm, c.options);
  EXPECT_EQ(folded.trace.workers, 8);
  EXPECT_EQ(folded.metrics.iteration_time_s, again.metrics.iteration_time_s);
  EXPECT_NEAR(folded.metrics.iteration_time_s / full.metrics.iteration_time_s, 1.0, 0.01);
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, StatisticalFoldedNearFull,
    ::testing::Values(
        Case{"ddp_jitter", "ddp", {}, ", jitter: {distribution: lognormal, sigma: 0.05}"},
        Case{"fsdp_jitter", "fsdp", {}, ", jitter: {distribution: lognormal, sigma: 0.05}"},
        Case{"acco_jitter", "acco", {}, ", jitter: {distribution: lognormal, sigma: 0.05}"},
        Case{"diloco_jitter",
             "diloco",
             {{"H", "2"}},
             ", jitter: {distribution: lognormal, sigma: 0.05}"},
        Case{"ddp_stragglers",
             "ddp",
             {},
             ", stragglers: [{gpu: 1, slowdown: 1.03}, {gpu: 6, slowdown: 1.07}, {gpu: 13, "
             "slowdown: 1.02}, {gpu: 22, slowdown: 1.05}]"},
        Case{"ddp_seq_lengths",
             "ddp",
             {},
             "",
             ", seq_len_distribution: {uniform: {min: 64, max: 256}}"}),
    [](const auto& case_info) { return std::string(case_info.param.name); });

} // namespace
} // namespace overlapsim
