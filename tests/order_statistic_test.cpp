// Order statistics for statistical folds past kStatisticalClocks GPUs (issue 64.4;
// sim/order_statistic.h, sim/slowest_of.h): one clock per group of alike GPUs draws the slowest of
// their sums, at a cost per op that does not grow with the GPUs.
#include "sim/gpu_draws.h"
#include "sim/order_statistic.h"
#include "sim/slowest_of.h"
#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <numeric>

namespace overlapsim {
namespace {

// Hand values from Python's statistics.NormalDist().inv_cdf: Phi^-1(0.975) = 1.9599639845400536;
// the largest of 128 normals' median, Phi^-1(0.5^(1/128)) = 2.549067054042406; of 4,096 at
// u = 0.9, Phi^-1(0.9^(1/4096)) = 4.048963790591923.
TEST(OrderStatistic, QuantilesByHand) {
  EXPECT_NEAR(sim::normal_quantile(0.975), 1.9599639845400536, 1e-12);
  EXPECT_NEAR(sim::normal_quantile(0.5), 0.0, 1e-15);
  EXPECT_NEAR(sim::max_of_normals_z(0.5, 128), 2.549067054042406, 1e-10);
  EXPECT_NEAR(sim::max_of_normals_z(0.9, 4096), 4.048963790591923, 1e-9);
  EXPECT_NEAR(sim::max_of_normals_z(0.975, 1), 1.9599639845400536, 1e-12);
  EXPECT_THROW(sim::max_of_normals_z(1.0, 4), std::invalid_argument);
}

// A clock's sum of 4 ops of 0.25 s, jitter sigma 0.1: mean 1 s, variance
// 4 x 0.25^2 x (e^0.01 - 1) = 0.0025125418 (lognormal), 4 x 0.25^2 x 0.01 = 0.0025 (normal).
// At z = 2: Fenton-Wilkinson s^2 = ln(1 + 0.0025125418) = 0.0025093906, the quantile
// exp(-s^2 / 2 + 2 s) = 1.1039922644; normal 1 + 2 x sqrt(0.0025) = 1.1; no jitter: the mean.
TEST(OrderStatistic, SumMeanAndDeviationByHand) {
  using D = scenario::JitterDistribution;
  EXPECT_NEAR(sim::jitter_factor_variance(D::lognormal, 0.05), 0.002503127605795085, 1e-15);
  EXPECT_NEAR(sim::jitter_factor_variance(D::normal, 0.05), 0.0025, 1e-15);
  EXPECT_EQ(sim::jitter_factor_variance(D::none, 0.05), 0.0);
  double variance = 0;
  for (int k = 0; k < 4; ++k)
    variance += 0.25 * 0.25 * sim::jitter_factor_variance(D::lognormal, 0.1);
  EXPECT_NEAR(variance, 0.0025125417710420146, 1e-15);
  EXPECT_NEAR(sim::sum_quantile(D::lognormal, 1.0, variance, 2.0), 1.1039922644132758, 1e-12);
  EXPECT_NEAR(sim::sum_quantile(D::normal, 1.0, 4 * 0.0625 * 0.01, 2.0), 1.1, 1e-12);
  EXPECT_EQ(sim::sum_quantile(D::none, 1.0, 0.0, 2.0), 1.0);
}

std::string yaml(const std::string& extra, const std::string& training = "") {
  return "name: order-statistic\n"
         "cluster: {nodes: 512, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, "
         "inter_node: ib-ndr" +
         extra +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 1, seq_len: 256, steps: 1, optimizer: adamw" +
         training + "}\nalgorithms: [ddp]\n";
}

std::vector<int> first_ranks(int n) {
  std::vector<int> ranks(static_cast<std::size_t>(n));
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

// One clock for all 4,096 GPUs (max_clocks 1): its first op of 1 s is the lognormal's quantile at
// z = Phi^-1(u^(1/4096)), u the group's first uniform (its first GPU's generator); a second op
// adds to the sum's mean and variance (Fenton-Wilkinson), not a second maximum.
TEST(OrderStatistic, OneClockDrawsTheSlowestOfItsGpus) {
  const auto s = testing::scenario_from(yaml(", jitter: {distribution: lognormal, sigma: 0.05}"));
  sim::SlowestOf of(s, first_ranks(4096), 1e12, 1);
  EXPECT_TRUE(of.drawn());
  EXPECT_EQ(of.clock_count(), 1);
  EXPECT_EQ(of.size(), 4096);
  auto rng = sim::jitter_generator(s.seed, 0);
  const double u0 = (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53; // stream 0's
  const double z = sim::max_of_normals_z(u0, 4096);
  const double v = std::expm1(0.05 * 0.05);
  const double first = of.op_seconds(0, 0.0, 1e12, MicroBatch{0, 0}, {});
  // One op: Fenton-Wilkinson's s^2 = ln(1 + v) is the lognormal's own sigma^2.
  EXPECT_NEAR(first, std::exp(-std::log1p(v) / 2 + std::sqrt(std::log1p(v)) * z), 1e-12);
  const double second = of.op_seconds(0, first, 1e12, MicroBatch{0, 0}, {});
  const double s2 = std::log1p(2 * v / 4);
  EXPECT_NEAR(first + second, std::exp(std::log(2.0) - s2 / 2 + std::sqrt(s2) * z), 1e-12);
}

// Over 1,001 seeds the one clock's first op has the median of the largest of 4,096 lognormals
// (exact for one op: exp(mu + sigma Phi^-1(0.5^(1/4096)))), as the path-by-path clocks have.
TEST(OrderStatistic, TheDrawHasTheMaximumsMedian) {
  auto s = testing::scenario_from(yaml(", jitter: {distribution: lognormal, sigma: 0.05}"));
  std::vector<double> slowest;
  const auto ranks = first_ranks(4096);
  for (std::uint64_t seed = 1; seed <= 1001; ++seed) {
    s.seed = seed;
    sim::SlowestOf of(s, ranks, 1e12, 1);
    slowest.push_back(of.op_seconds(0, 0.0, 1e12, MicroBatch{0, 0}, {}));
  }
  std::nth_element(slowest.begin(), slowest.begin() + 500, slowest.end());
  EXPECT_NEAR(slowest[500], sim::max_of_lognormals_quantile(-0.05 * 0.05 / 2, 0.05, 4096, 0.5),
              0.003);
}

// A straggler keeps its own clock and draws: at 3x it is the slowest, its op exactly its draw.
TEST(OrderStatistic, StragglersKeepTheirOwnClock) {
  const auto s = testing::scenario_from(yaml(", jitter: {distribution: lognormal, sigma: 0.05}, "
                                             "stragglers: [{gpu: 777, slowdown: 3}]"));
  sim::SlowestOf of(s, first_ranks(4096), 1e12, 16);
  EXPECT_EQ(of.clock_count(), 17);
  auto rng = sim::jitter_generator(s.seed, 777);
  const double draw = sim::draw_jitter(s.cluster.jitter, 1.0, rng);
  EXPECT_DOUBLE_EQ(of.op_seconds(0, 0.0, 1e12, MicroBatch{0, 0}, {}), 3 * draw);
}

// Without jitter, per-GPU lengths make the slowest exactly the GPU of the longest sum: grouped
// clocks follow each group's, across two micro-batches in one interval (the second costs as the
// first, so the projection is exact), and give the path-by-path clocks' times.
TEST(OrderStatistic, LengthsStayExact) {
  const auto s = testing::scenario_from(
      yaml("", ", seq_len_distribution: {lognormal: {median: 128, sigma: 0.5}}"));
  const auto ranks = first_ranks(4096);
  sim::SlowestOf exact(s, ranks, 1e12);
  sim::SlowestOf drawn(s, ranks, 1e12, 64);
  EXPECT_FALSE(exact.drawn());
  const auto at = [](double r) { return 1e12 * (0.7 * r + 0.3 * r * r); };
  double t_exact = 0, t_drawn = 0;
  for (const int mb : {0, 1})
    for (int op = 0; op < 3; ++op) {
      t_exact += exact.op_seconds(0, t_exact, at(1), MicroBatch{0, mb}, at);
      t_drawn += drawn.op_seconds(0, t_drawn, at(1), MicroBatch{0, mb}, at);
      if (op == 2) { // a micro-batch's end: inside it the leader is the projected end's
        EXPECT_NEAR(t_drawn, t_exact, 1e-9 * t_exact) << "micro-batch " << mb;
      }
      EXPECT_LE(t_drawn, t_exact * (1 + 1e-9));
    }
  EXPECT_GT(t_exact, 6 * 0.9); // the longest of 4,096 lengths, near seq_len twice
}

// ACCO's two rounds of a step number their micro-batches from 0 each: a micro-batch of the same
// (step, index) as the previous one follows it. Marked as a new one (micro_batch_starts, what a
// forward from the first layer calls), one clock for 8 GPUs without jitter stays the path-by-path
// clocks at every micro-batch's end over 20 seeds; taken as one (before the fix), the next
// micro-batch's projection doubled, chose the wrong leader and fell up to 18.5% short.
TEST(OrderStatistic, ARepeatedMicroBatchIsANewOne) {
  auto s = testing::scenario_from(
      yaml("", ", seq_len_distribution: {lognormal: {median: 128, sigma: 1}}"));
  const auto at = [](double r) { return 1e12 * (0.7 * r + 0.3 * r * r); };
  double worst = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    s.seed = seed;
    sim::SlowestOf exact(s, first_ranks(8), 1e12);
    sim::SlowestOf drawn(s, first_ranks(8), 1e12, 1);
    double t_exact = 0, t_drawn = 0;
    for (const int mb : {0, 0, 1, 1, 2}) {
      exact.micro_batch_starts(0);
      drawn.micro_batch_starts(0);
      for (int op = 0; op < 2; ++op) {
        t_exact += exact.op_seconds(0, t_exact, at(1), MicroBatch{0, mb}, at);
        t_drawn += drawn.op_seconds(0, t_drawn, at(1), MicroBatch{0, mb}, at);
      }
      worst = std::max(worst, std::abs(t_drawn / t_exact - 1));
    }
  }
  EXPECT_LT(worst, 1e-9);
}

} // namespace
} // namespace overlapsim
