#include "validate/launcher.h"

#include <gtest/gtest.h>

namespace overlapsim::real {
namespace {

using Shares = std::vector<std::vector<int>>;

TEST(CoreShares, EachWorkerGetsAnEqualRunOfConsecutiveCores) {
  EXPECT_EQ(core_shares({0, 1}, 2), (Shares{{0}, {1}}));
  EXPECT_EQ(core_shares({0, 1, 2, 3, 4, 5, 6, 7}, 2), (Shares{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // The ids this process may use, whatever they are; 7 cores for 3 workers: 2 each, one unused.
  EXPECT_EQ(core_shares({2, 3, 5, 8, 9, 10, 11}, 3), (Shares{{2, 3}, {5, 8}, {9, 10}}));
  EXPECT_EQ(core_shares({4}, 1), (Shares{{4}}));
}

TEST(CoreShares, MoreWorkersThanCoresShareThemRoundRobin) {
  EXPECT_EQ(core_shares({0, 1}, 3), (Shares{{0}, {1}, {0}}));
  EXPECT_EQ(core_shares({0, 1}, 4), (Shares{{0}, {1}, {0}, {1}}));
}

TEST(CoreShares, NoKnownCoresLeavesWorkersUnbound) {
  EXPECT_EQ(core_shares({}, 2), (Shares{{}, {}}));
}

} // namespace
} // namespace overlapsim::real
