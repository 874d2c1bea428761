// Jitter (cluster.jitter, scenario::Jitter): every compute op's time multiplied by a draw of mean
// 1, with one sigma for every op (`sigma`) or one that shrinks with the op's length (`sigma_1s`,
// an op of t seconds drawing sigma_1s / sqrt(t)), so a worker's noise adds up with the time it
// computes however finely the ops cut it: the form `profile` measures (validate/profiler.cpp).
#include "test_util.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace overlapsim {
namespace {

TEST(Jitter, AOneSecondSigmaShrinksWithTheSquareRootOfTheOpsLength) {
  scenario::Jitter j{.distribution = scenario::JitterDistribution::lognormal, .sigma_1s = 0.01};
  EXPECT_TRUE(j.active());
  EXPECT_DOUBLE_EQ(j.sigma_of(1.0), 0.01);
  EXPECT_DOUBLE_EQ(j.sigma_of(0.04), 0.05);                        // 0.01 / 0.2
  EXPECT_DOUBLE_EQ(j.sigma_of(4.0), 0.005);                        // 0.01 / 2
  EXPECT_DOUBLE_EQ(j.sigma_of(1e-6), scenario::Jitter::kMaxSigma); // 10 capped at 0.5
  // Every op's sigma where `sigma` is given; nothing drawn where the distribution is none.
  const scenario::Jitter per_op{.distribution = scenario::JitterDistribution::lognormal,
                                .sigma = 0.2};
  EXPECT_DOUBLE_EQ(per_op.sigma_of(1e-6), 0.2);
  EXPECT_DOUBLE_EQ(per_op.sigma_of(3.0), 0.2);
  j.distribution = scenario::JitterDistribution::none;
  EXPECT_FALSE(j.active());
}

// Per op kind (name) of DDP's forward and backward on two GPUs: the nominal time (the median) and
// the spread of log(GPU 0's time / GPU 1's) over the steps, sqrt(2) x each draw's sigma (both
// GPUs draw alike; nothing else slows a compute op on round_cluster, which has no interference).
std::map<std::string, std::pair<double, double>> spread_by_op(const std::string& jitter) {
  const auto s = testing::scenario_from(
      "name: jitter\n" + testing::round_cluster(2, 1, "  jitter: " + jitter + "\n") +
      testing::kFourBlocks +
      "training: {micro_batch: 1, seq_len: 1, warmup_steps: 0, steps: 400, optimizer: adamw}\n"
      "algorithms: [ddp]\n");
  const auto trace = testing::simulate(s, "ddp").trace;
  std::map<std::tuple<std::string, int, int>, std::array<double, 2>> pairs;
  for (const auto& e : trace.events)
    if (e.category == OpCategory::forward || e.category == OpCategory::backward)
      pairs[{trace.name_of(e.name), e.step, e.micro_batch}][static_cast<std::size_t>(e.worker)] =
          e.end - e.start;
  std::map<std::string, std::vector<std::array<double, 2>>> by_name;
  for (const auto& [key, d] : pairs)
    by_name[std::get<0>(key)].push_back(d);
  std::map<std::string, std::pair<double, double>> out;
  for (auto& [name, d] : by_name) {
    std::vector<double> times;
    double mean = 0, square = 0;
    for (const auto& [a, b] : d) {
      times.push_back(std::sqrt(a * b));
      mean += std::log(a / b) / static_cast<double>(d.size());
      square += std::log(a / b) * std::log(a / b) / static_cast<double>(d.size());
    }
    std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2),
                     times.end());
    out[name] = {times[times.size() / 2], std::sqrt(square - mean * mean)};
  }
  return out;
}

TEST(Jitter, EachOpDrawsTheSigmaOfItsLength) {
  // kFourBlocks on round_cluster: forward 1 ms and backward 2 ms a layer, in ops of one or more
  // layers. sigma_1s 0.002: a 4 ms op draws 0.002 / sqrt(0.004) = 0.0316, a 1 ms op 0.0632. Over
  // 400 steps a sigma's estimate is within 3.5% (one standard error): 12% is 3.4 of them.
  const auto spread = spread_by_op("{distribution: lognormal, sigma_1s: 0.002}");
  ASSERT_GE(spread.size(), 2u);
  std::set<long> lengths_us;
  for (const auto& [name, op] : spread) {
    const auto [seconds, log_ratio_sd] = op;
    lengths_us.insert(std::lround(seconds * 1e6));
    EXPECT_NEAR(log_ratio_sd / std::sqrt(2.0), 0.002 / std::sqrt(seconds),
                0.12 * 0.002 / std::sqrt(seconds))
        << name << " (" << seconds << " s)";
  }
  EXPECT_GE(lengths_us.size(), 2u) << "ops of one length cannot tell the forms apart";
  // One sigma for every op: the same spread whatever its length.
  for (const auto& [name, op] : spread_by_op("{distribution: lognormal, sigma: 0.05}"))
    EXPECT_NEAR(op.second / std::sqrt(2.0), 0.05, 0.12 * 0.05) << name;
}

} // namespace
} // namespace overlapsim
