#include "validate/profile_statistics.h"

#include <gtest/gtest.h>

namespace overlapsim::real {
namespace {

TEST(ProfileStatistics, ExpectedTimeKeepsTheSlowTailTheRunPays) {
  // 9 repeats at 1 ms and one at 11 ms: the run pays 2 ms on average; the median says 1 ms.
  std::vector<double> t(9, 1e-3);
  t.push_back(11e-3);
  EXPECT_DOUBLE_EQ(expected_time(t), 2e-3);
}

TEST(ProfileStatistics, ExpectedTimeDropsTheSlowestFivePercent) {
  // 40 repeats: the 2 slowest (a 75 ms first touch, a 30 ms preemption) go; 38 remain.
  std::vector<double> t(36, 1e-3);
  t.push_back(3e-3);
  t.push_back(5e-3);
  t.push_back(75e-3);
  t.push_back(30e-3);
  EXPECT_DOUBLE_EQ(expected_time(t), (36 * 1e-3 + 3e-3 + 5e-3) / 38);
  EXPECT_EQ(expected_time({}), 0);
}

TEST(ProfileStatistics, RepeatsCoverTheTimeBudgetWithinBounds) {
  ProfileOptions o;                       // at least 5, 0.25 s, at most 200
  EXPECT_EQ(repeats_for(o, 0.3), 5);      // a GPU model's step: the minimum
  EXPECT_EQ(repeats_for(o, 0.01), 25);    // 25 x 10 ms = 0.25 s
  EXPECT_EQ(repeats_for(o, 0.0004), 200); // 625 wanted, capped
  EXPECT_EQ(repeats_for(o, 0), 200);
  o.min_time_s = 0.02;
  EXPECT_EQ(repeats_for(o, 0.001), 20);
}

} // namespace
} // namespace overlapsim::real
